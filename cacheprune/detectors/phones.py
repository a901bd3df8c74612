"""Phone numbers of many countries, international and national formats, checked by phonenumbers.

A candidate is a run of digits with the separators people type (spaces, dashes, dots,
slashes, parentheses, a '(0)'), 7 to 15 digits (an area code in parentheses is one step of
the pattern, so '(07937) 37637' has few steps and enough digits), optionally after '+' or a
'00' international prefix; or a North American vanity number, its last digits spelled in
capitals. It is a phone number when Google's libphonenumber metadata (the `phonenumbers`
package) says it is valid: as written for an international number, or in one of `regions` for
a national one.
"""

from __future__ import annotations

from typing import Any

import regex

from cacheprune.detectors.base import Detector, DetectorConfigError, DetectorUnavailableError, Span

ENTITY = "PHONE_NUMBER"
# Countries whose national formats are tried, most-used first (ISO 3166 alpha-2).
DEFAULT_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "JP", "IN", "CA", "AU", "IE",
                   "BE", "CH", "AT", "PT", "SE", "NO", "DK", "FI", "PL", "BR", "MX", "AR",
                   "CN", "HK", "SG", "KR", "ZA", "NG", "AE", "TR", "RU", "UA", "IL", "NZ")
_CANDIDATE = regex.compile(
    r"(?<![\w+/.,-])(?P<number>(?:\+|00)?[ ]?(?:\(\d{1,5}\)|\d)"
    r"(?:(?:[ ]/[ ]|[ ./\-])?(?:\(0\)|\(\d{1,5}\)|\d)){4,34})(?!(?![xX]\d)[\w/]|[.,]\d|-\w)"
)
# A vanity number spells its last digits in capitals ('1-888-KAT-LAWN', '1-800-FLOWERS').
_VANITY = regex.compile(
    r"(?<![\w+/.,-])(?P<number>(?:\+?1[ .\-]?)?(?:\(\d{3}\)[ ]?|\d{3}[ .\-])"
    r"(?=[A-Z0-9.\-]*[A-Z]{2})[A-Z0-9](?:[A-Z0-9]|[.\-](?=[A-Z0-9])){6,9})(?![\w-])"
)
_SLASH_HALF = regex.compile(r"[^/]+?(?= / |$)")
_PHONE_WORDS = (r"phone|telephone|tel|mobile|cell|cellphone|call|ring|text|sms|fax|whatsapp|"
                r"signal|dial|téléphone|portable|teléfono|móvil|telefon|handy|telefono|"
                r"cellulare|telefoon|mobiel|電話|携帯|电话|手机")
_CONTEXT = regex.compile(
    rf"(?<!\w)(?:{_PHONE_WORDS}|number|contact|reach|numéro|número|nummer|numero)(?!\w)",
    regex.IGNORECASE,
)
# Words that say phone, not just 'number' ('tracking number' is no phone's).
_PHONE_CONTEXT = regex.compile(rf"(?<!\w)(?:{_PHONE_WORDS})(?!\w)", regex.IGNORECASE)
_CONTEXT_WINDOW = 40
_DIGIT_GROUPS = regex.compile(r"\d+")
# An extension after the number is part of it: 'ext. 204', 'x12', 'poste 31', 'Durchwahl -15',
# also written right against it ('295-963-0357x991'; the candidate may end before such an 'x').
_EXTENSION = regex.compile(
    r"(?i:,?[ \t]*(?:ext\.?|extension|x|poste|durchwahl|dw\.?|int\.?|interno)[ \t]*[-.:#]?[ \t]*)"
    r"\d{1,6}(?!\w)"
)
# Shapes that are dates, not phone numbers: 2021-03-04, 14.03.1987, 04/11/62, 2019 / 2020,
# and days of one month ('11-12/6/2026').
_DATE_SHAPE = regex.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}"
                            r"|(?:\d{1,2}-)?\d{1,2}[-./]\d{1,2}[-./]\d{2,4}"
                            r"|(?:19|20)\d{2} ?[/-] ?(?:19|20)\d{2}")
# A template's number: an area code, then at least six digits all zeros ('01342 000000', '020 000
# 0000'); one run of digits ('90000000') may be anyone's number or account.
_MIN_TEMPLATE_ZEROS = 6
# Shapes that start as a date or are a span of clock times: '2025/03/14 03' (a log stamp cut
# at the colon), '8.00-18.00' and '09:00 - 17:30' (opening hours).
_DATE_START = regex.compile(r"(?:19|20)\d{2}[-./](?:0?[1-9]|1[0-2])[-./](?:0?[1-9]|[12]\d|3[01])"
                            r"(?!\d)")
_HOURS = regex.compile(r"(?:[01]?\d|2[0-3])[.:][0-5]\d ?[-–] ?(?:[01]?\d|2[0-3])[.:][0-5]\d")
# A day-first date then the hour of a log line ('22.07.2025 03:00:01', '14.03.2025 / 10:22').
_DAY_FIRST_DATE_START = regex.compile(r"(?:0?[1-9]|[12]\d|3[01])[./-](?:0?[1-9]|1[0-2])[./-]"
                                      r"(?:19|20)\d{2}(?!\d)")
# Addresses and networks ('192.168.0.1', '172.16.0.0/12'), and versions whose later parts
# have one digit ('12.4.0.3381', 'build 4.2.1.17'), are no phone numbers.
_IP_SHAPE = regex.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?")
_VERSION_SHAPE = regex.compile(r"\d+(?:\.\d+)*\.\d(?:\.\d+)+|\d+(?:\.\d+)+\.\d")
# A number labelled as something else on its line, with no phone word near it: a parcel's
# tracking number, an order, an invoice, an article or a barcode.
_OTHER_LABEL = regex.compile(
    r"(?i:(?<!\w)(?:tracking|track(?:ing)? (?:no|number|id)|shipment|waybill|awb|spedizione|"
    r"sendungs(?:nummer|nr)|paketnummer|colis|envío|seguimiento|takip|運送장번호|运单号|"
    r"order|bestell(?:ung|nummer)?|commande|pedido|ordine|invoice|rechnung|facture|factura|"
    r"fattura|sku|ean|gtin|barcode|vonalkód|artikel(?:nr|nummer)?|article|lot|batch|charge|"
    r"build|version|release)(?!\w)[^\n]{0,24}$)"
)


class PhoneDetector(Detector):
    """Valid phone numbers; a national number without separators needs a context word."""

    def __init__(self, regions: list[str] | None = None, threshold: float = 0.5,
                 name: str = "phones") -> None:
        try:
            import phonenumbers
        except ModuleNotFoundError as exc:
            raise DetectorUnavailableError(
                "the phone detector needs phonenumbers; pip install 'phonenumbers>=8.13'"
            ) from exc
        self._lib: Any = phonenumbers
        self.name = name
        # Numbers scored below it (a bare digit run without a context word) are not reported.
        self.threshold = threshold
        self.regions = tuple(DEFAULT_REGIONS if regions is None else regions)
        supported = phonenumbers.SUPPORTED_REGIONS
        unknown = sorted(set(self.regions) - supported)
        if unknown:
            raise DetectorConfigError(
                f"detector '{name}': unknown phone regions {unknown}; use ISO 3166 alpha-2 codes"
            )

    def describe(self) -> dict[str, Any]:
        return {"regions": list(self.regions), "threshold": self.threshold,
                "phonenumbers": self._lib.__version__}

    def detect(self, text: str) -> list[Span]:
        spans = self._vanity(text)
        for match in _CANDIDATE.finditer(text):
            # Two numbers written 'A / B' are one candidate; each half is tried on its own.
            pieces = [(match.start(), match.end())]
            if " / " in match.group() and self._found(text, match.start(), match.end()) is None:
                pieces = [(m.start() + match.start(), m.end() + match.start())
                          for m in _SLASH_HALF.finditer(match.group())]
            for start, end in pieces:
                span = self._found(text, start, end)
                if span is not None:
                    spans.append(span)
        return spans

    def _found(self, text: str, start: int, end: int) -> Span | None:
        raw = text[start:end]
        digits = sum(ch.isdigit() for ch in raw)
        if not 7 <= digits <= 15:
            return None
        if _template_number(raw):
            return None
        score = self._score(raw, text, start, end)
        if score is None or score < self.threshold:
            return None
        extension = _EXTENSION.match(text, end)
        return Span(ENTITY, start + len(raw) - len(raw.lstrip()),
                    end if extension is None else extension.end(), score, self.name)

    def _vanity(self, text: str) -> list[Span]:
        spans = []
        for match in _VANITY.finditer(text):
            digits = self._lib.convert_alpha_characters_in_number(match.group("number"))
            if 10 <= sum(ch.isdigit() for ch in digits) <= 11 and self._is_valid(digits, "US"):
                spans.append(Span(ENTITY, match.start(), match.end(), 0.8, self.name))
        return spans

    def _score(self, raw: str, text: str, start: int, end: int) -> float | None:
        compact = raw.strip()
        international = compact.startswith(("+", "00"))
        if international:
            # NOTE: fictional and reserved ranges (UK 07700 900xxx, US 555) are 'possible' but
            # not 'valid'; a value written as an international number is private either way.
            candidate = "+" + compact[2:] if compact.startswith("00") else compact
            return 0.9 if self._is_valid(candidate, None) else (
                0.7 if self._is_possible(candidate, None) else None)
        if (_DATE_SHAPE.fullmatch(compact) or _DATE_START.match(compact)
                or _DAY_FIRST_DATE_START.match(compact) or _HOURS.fullmatch(compact)
                or _IP_SHAPE.fullmatch(compact) or _VERSION_SHAPE.fullmatch(compact)):
            return None
        if regex.search(r"\d:$", text[max(0, start - 2):start]):
            return None  # the seconds and fraction of a clock time ('18:44:09.201937')
        if not any(self._is_valid(compact, region) for region in self.regions):
            return None
        has_context = bool(_CONTEXT.search(text[max(0, start - _CONTEXT_WINDOW):start])
                           or _CONTEXT.search(text[end:end + _CONTEXT_WINDOW]))
        line_before = text[text.rfind("\n", 0, start) + 1:start]
        if _OTHER_LABEL.search(line_before[-40:]) and not (
                _PHONE_CONTEXT.search(text[max(0, start - _CONTEXT_WINDOW):start])
                or _PHONE_CONTEXT.search(text[end:end + _CONTEXT_WINDOW])):
            return None
        if has_context:
            return 0.85
        # A national number written the way phone numbers are ('(415) 555-0132', '020 7946
        # 0958', '612 34 56 78': a trunk 0, an area code in parentheses or three or more groups)
        # is a phone number on its own; '1123-1135' or a bare digit run could be anything.
        groups = len(_DIGIT_GROUPS.findall(compact))
        return 0.6 if compact.startswith(("0", "(")) and groups >= 2 or groups >= 3 else 0.4

    def _is_valid(self, number: str, region: str | None) -> bool:
        parsed = self._parsed(number, region)
        return parsed is not None and bool(self._lib.is_valid_number(parsed))

    def _is_possible(self, number: str, region: str | None) -> bool:
        parsed = self._parsed(number, region)
        return parsed is not None and bool(self._lib.is_possible_number(parsed))

    def _parsed(self, number: str, region: str | None) -> Any:
        try:
            return self._lib.parse(number, region)
        except self._lib.NumberParseException:
            return None


def _template_number(raw: str) -> bool:
    subscriber = "".join(_DIGIT_GROUPS.findall(raw)[1:])
    return len(subscriber) >= _MIN_TEMPLATE_ZEROS and not subscriber.strip("0")
