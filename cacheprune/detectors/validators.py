"""Checks a regex match must pass before it counts (checksums, ranges the regex cannot express)."""

from __future__ import annotations

import importlib
import ipaddress
from collections.abc import Callable


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def luhn(text: str) -> bool:
    """Payment card check digit (ISO/IEC 7812)."""
    digits = _digits(text)
    if not 12 <= len(digits) <= 19:
        return False
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = int(ch)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def iban(text: str) -> bool:
    """IBAN mod-97 check (ISO 13616): first four characters moved last, letters as 10..35."""
    compact = "".join(text.split()).upper()
    if not 15 <= len(compact) <= 34 or not compact.isalnum():
        return False
    rearranged = compact[4:] + compact[:4]
    as_number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(as_number) % 97 == 1


def us_ssn(text: str) -> bool:
    """Numbers the US never issues: area 000, 666 or 900+, group 00, serial 0000."""
    digits = _digits(text)
    if len(digits) != 9:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def ip_address(text: str) -> bool:
    """A valid IPv4 or IPv6 address (octets in range, one '::' at most...)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def phone(text: str) -> bool:
    """E.164 allows at most 15 digits; fewer than 7 is not a reachable number."""
    return 7 <= len(_digits(text)) <= 15


# National identity and tax numbers checked by python-stdnum (check digits, date and region
# fields). Its modules accept the usual separators.
_STDNUM_MODULES = {
    "es_dni_nie": ("stdnum.es.dni", "stdnum.es.nie"),
    "it_codice_fiscale": ("stdnum.it.codicefiscale",),
    "nl_bsn": ("stdnum.nl.bsn",),
    "fr_nir": ("stdnum.fr.nir",),
    "de_idnr": ("stdnum.de.idnr",),
    "gb_nhs": ("stdnum.gb.nhs",),
    "in_aadhaar": ("stdnum.in_.aadhaar",),
    "in_pan": ("stdnum.in_.pan",),
    "br_cpf": ("stdnum.br.cpf",),
    "ca_sin": ("stdnum.ca.sin",),
    "cn_ric": ("stdnum.cn.ric",),
    "pl_pesel": ("stdnum.pl.pesel",),
    "mx_curp": ("stdnum.mx.curp",),
}


def _stdnum_validator(module_names: tuple[str, ...]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        return any(importlib.import_module(name).is_valid(text) for name in module_names)

    check.__doc__ = f"Valid per python-stdnum's {', '.join(module_names)}."
    return check


VALIDATORS: dict[str, Callable[[str], bool]] = {
    "luhn": luhn,
    "iban": iban,
    "us_ssn": us_ssn,
    "ip_address": ip_address,
    "phone": phone,
    **{name: _stdnum_validator(modules) for name, modules in _STDNUM_MODULES.items()},
}
