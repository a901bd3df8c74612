"""Contacts of organisations, not of persons: spans the chain drops before masking.

Organisations publish their switchboard and hotline numbers, their registered office and their
company and VAT numbers; no tenant's privacy rests on them, and masking them breaks the sharing
of every e-mail footer and imprint. A span is an organisation's contact when the text says so:

- a phone number of a service type no person holds (toll-free and shared-cost numbers:
  `0800 ...`, `1-800-...`, `0120-...`), by phonenumbers' metadata;
- a phone number or an address right after an organisation's label on its line
  (`Switchboard:`, `Customer service`, `Head office:`, `Siège social :`, `Zentrale`, `本社`,
  `Our address is`, `Nuestra dirección es`);
- an address right after an institution's name, or starting with one (`the Civic Centre, 2
  Station Road`, `Bezirksamt Hamburg-Nord, Kümmellstraße 7`, `Returns Centre, Unit 4 ...`);
- a phone number or an address on the line of a company's name with its legal form, or on
  one of the two lines under it (`Northwind Traders Ltd`, `Stadtwerke Ulmental GmbH`,
  `株式会社…`; the legal form ends its line or is followed by a comma or a bar),
  or under a team's sign-off line (`Brightline Customer Support`);
- any span that follows or starts with a company register's label (`Company no.`, `VAT`,
  `KvK`, `HRB`, `RCS Paris`);
- an e-mail address of a role mailbox (`info@`, `service.client@`, `noreply@`, `recruitment@`).

NOTE: a missed private value costs more than a masked public one, so each rule yields to a
person: a personal word before the value on its line (`my`, `home`, `mobile`, `ship to`,
`privat`...) or a person's name found on the lines read keeps the value masked.
"""

from __future__ import annotations

from functools import lru_cache

import phonenumbers
import regex

from cacheprune.detectors.base import Span

_PHONE = "PHONE_NUMBER"
_ADDRESS = "STREET_ADDRESS"
_CONTACTS = frozenset({_PHONE, _ADDRESS})
# Never dropped: what identifies a person or a secret wherever it stands.
_KEPT = frozenset({"EMAIL_ADDRESS", "EMAIL", "SECRET", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE",
                   "US_SSN", "PERSON"})
_PERSON = "PERSON"
_EMAILS = frozenset({"EMAIL_ADDRESS", "EMAIL"})
# Local parts of role mailboxes, in many languages ('service.client', 'kundenservice').
_ROLE_WORDS = frozenset("""
info infos information contact contacts contacto contato kontakt hello hallo hola bonjour hi
support help helpdesk service services customerservice customer customers client clients
clientes cliente care sales vendas ventas vente billing accounts accounting invoices invoice
finance procurement purchasing orders order returns noreply no reply donotreply do not admin
administration office reception press presse prensa stampa media pr marketing hr jobs job
careers career recruitment recruiting bewerbung bewerbungen team webmaster postmaster abuse
security privacy dpo datenschutz legal compliance events bookings booking reservations
reservas enquiries inquiries feedback newsletter assistenza servizio clienti kundenservice
kundendienst verwaltung sekretariat secretaria secretaría secretariat segreteria
atendimento atencion atención mail post hotline it ops operations
""".split())

_ORG_LABEL = regex.compile(
    r"(?i:(?<!\w)(?:switchboard|main (?:line|office|number)|head ?office|headquarters|HQ|"
    r"registered (?:office|address)|company address|hotline|helpline|"
    r"help ?desk|service ?desk|customer (?:service|care|support|relations)(?: line| team)?|"
    r"support (?:line|team|hotline)|sales (?:line|office)|toll[- ]free|freephone|press office|"
    r"zentrale|telefonzentrale|hauptverwaltung|hauptsitz|firmensitz|sitz der gesellschaft|"
    r"gesch[äa]ftssitz|kundenservice|kundendienst|st[öo]rungsdienst|servicehotline|"
    r"si[èe]ge(?: social)?|service (?:client(?:s|èle)?|consommateurs)|num[ée]ro vert|"
    r"centralita|sede (?:central|social|legale)|domicilio social|oficina central|"
    r"atenci[óo]n al cliente|centralino|servizio clienti|numero verde|hoofdkantoor|"
    r"klantenservice|servicedesk|bezoekadres|centrala|biuro obsługi klienta|infolinia|"
    r"служба поддержки|горячая линия|本社|本店|お客様相談室|お客様センター|フリーダイヤル|"
    r"代表電話|総務部|总部|客服(?:热线|電話|电话)?|总机|본사|고객센터|대표번호|"
    # enquiry and information desks of services (timetables, libraries, shops, utilities)
    r"(?:general )?enquiries|information desk|circulation desk|"
    r"box office|reservations|booking line|service line|pharmacy line|informaci[óo]n|"
    r"informazioni|servizio consumatori|prenotazioni|auskunft|fahrplanauskunft|"
    r"kundtj[äa]nst|kundeservice|kundesenter(?:et)?|asiakaspalvelu|vev[őo]szolg[áa]lat|"
    r"m[üu]şteri (?:hizmetleri|ileti[şs]im merkezi)|relation clients?|infolini[a-ząę]*|"
    r"справочная|контактн[а-я]* центр[а-я]*|お問い合わせ|문의|热线|"
    # desks and lines of offices, schools and services
    r"customer line|reception|sekretariat[a-zäöü]*|sekretariacie|secretar[ií]a|"
    r"segreteria|secr[ée]tariat|справочн[а-я]*|咨询电话|諮詢電話|服务热线|服務專線|"
    r"infoline|informacje|24/7|7/24|service des imp[ôo]ts|"
    # an organisation speaking of its own premises
    r"our (?:new )?(?:address|offices?|premises|shop|store|studio|clinic|branch)|"
    r"(?:we're|we are|we've moved|we have moved)(?: now)? (?:at|to)|visit us at|find us at|"
    r"nuestra (?:nueva )?direcci[óo]n|nuestras oficinas|notre (?:nouvelle )?adresse|"
    r"nos bureaux|unsere (?:neue )?adresse|besuchen sie uns|onze (?:nieuwe )?adres|"
    r"nosso (?:novo )?endere[çc]o|il nostro indirizzo|nasz adres|наш адрес))"
)
# An institution named right before an address on its line, or at its start ('at the Civic
# Centre, 2 Station Road', 'Bezirksamt Hamburg-Nord, Kümmellstraße 7', 'Fiera Milano Rho (Strada
# ...'). No word for a home or a block of flats ('Tower', 'Court', 'House', 'Hall of Residence').
_INSTITUTION_NAME = (
    r"(?i:(?<!\w)(?:cent(?:re|er|rum)|library|museum|hospital|clinic|school|college|university|"
    r"embassy|consulate|hotel|station|expo|fiera|messe|rathaus|[a-zäöü]*amt|stadsloket|"
    r"gemeente|mairie|ayuntamiento|comune|municipio|palazzo|town hall|city hall|council|"
    r"headquarters|depot|warehouse|stadium|church|cathedral|theatre|theater|cinema|airport|"
    r"post office|co-op|supermarket|pharmacy|apotheke|farmacia|pharmacie|посольство|"
    r"консульство|구청|시청|주민센터|区役所|市役所|役場))"
    r"(?:[ \t-]+(?:\p{Lu}[\p{L}\-]*|de|del|della|di|du|des|la|le|van|von|der)){0,4}"
    r"(?:[ \t]+car park)?[ \t]*[,(:–]"
)
_INSTITUTION_BEFORE = regex.compile(_INSTITUTION_NAME + r"[ \t]*$")
_INSTITUTION_FIRST = regex.compile(r"(?:\p{Lu}[\p{L}'’\-]*[ \t]+){0,3}" + _INSTITUTION_NAME)

# Between an organisation's label and its value: punctuation, a short note, no digits.
_LABEL_GAP = regex.compile(r"[^\d\n]{0,40}$")
_REGISTER_LABEL = regex.compile(
    r"(?i:(?<!\w)(?:company (?:no|number|reg(?:istration)?(?: no)?)|reg(?:istration)? no|"
    r"registered in [a-z ]+ no|crn|vat(?: (?:no|number|id|reg))?|ust-?id(?:nr)?|"
    r"umsatzsteuer-?id(?:entifikationsnummer)?|steuernummer des unternehmens|hrb|hra|"
    r"amtsgericht [^\n,]{0,20}|handelsregister|rcs(?: [a-zé-]+)?|siren|siret|"
    r"tva intracommunautaire|"
    r"kvk(?:-nummer)?|btw(?:-nummer)?|cif|p\.? ?iva|partita iva|abn|acn|company registration)"
    r"\.?\s*(?:[:#]|no\.?)?\s*(?:[A-Z]{2}\s?)?$)"
)
_LEGAL_FORM = regex.compile(
    r"(?<![\w.])(?:GmbH|AG|Ltd|Limited|Inc|LLC|LLP|plc|PLC|SA|S\.A|SAS|SARL|S\.à r\.l|B\.V|BV|"
    r"N\.V|NV|S\.r\.l|S\.p\.A|SpA|Sp\. z o\.o|KG|GbR|e\.V|Pty|Corp|Co\., Ltd|Oy|A/S|ASA|"
    r"Kft|s\.r\.o|a\.s|K\.K|S\.L|S\.L\.U)\.?(?=[ \t]*(?:[,·|)–-]|$))"
    r"|株式会社|有限会社|有限公司|股份有限公司|주식회사|\(주\)",
    regex.MULTILINE,
)
_TEAM_LINE = regex.compile(
    r"(?i:^[^\d\n]{0,50}(?<!\w)(?:support|service|services|team|care|desk|helpdesk|servicedesk|"
    r"kundenservice|klantenservice|kundendienst|operations|department|office|support team|"
    r"-team)[ \t]*$)"
)
_PERSONAL = regex.compile(
    r"(?i:(?<!\w)(?:my|mine|me|our home|home|private|privat|privé|personal|persönlich|"
    r"mobile|mobil|cell|handy|direct|direkt|durchwahl|ship(?:ping)? to|deliver(?:y)? to|"
    r"bill(?:ing)? to|c/o|care of|resident|lives|wohnhaft|patient|applicant|employee|tenant|"
    r"meine?|mijn|mon|ma|mes|mi|mio|mia|mój|moja|mein)(?!\w))"
)
# NOTE: premium-rate numbers are left out: GB's 09 prefix reads Indian mobile numbers written
# with their trunk 0 ('098450 77312') as premium-rate.
_SERVICE_TYPES = ("TOLL_FREE", "SHARED_COST")
_REGIONS = ("US", "GB", "DE", "FR", "ES", "IT", "NL", "JP", "IN", "CA", "AU", "IE", "BE", "CH",
            "AT", "PT", "SE", "NO", "DK", "FI", "PL", "BR", "MX", "CN", "KR", "ZA")



def drop_organisation_contacts(text: str, spans: list[Span]) -> list[Span]:
    """`spans` without those that the text marks as an organisation's contact details."""
    people = [s for s in spans if s.entity == _PERSON]
    dropped = {s for s in spans
               if s.entity not in _KEPT and _is_organisation_contact(text, s, people)
               or s.entity in _EMAILS and _is_role_mailbox(text, s)}
    # Town names the name detector read inside a dropped address ('San Francisco') go with it,
    # and so does what another detector labelled otherwise inside a dropped contact (the token
    # tagger may read a hotline's digits as a date); what is never dropped stays.
    places = [s for s in dropped if s.entity == _ADDRESS]
    dropped |= {p for p in people if any(a.start <= p.start and p.end <= a.end for a in places)}
    dropped |= {s for s in spans if s.entity not in _KEPT
                and any(d.start <= s.start and s.end <= d.end for d in dropped)}
    return [s for s in spans if s not in dropped]


def _is_organisation_contact(text: str, span: Span, people: list[Span]) -> bool:
    line_start = text.rfind("\n", 0, span.start) + 1
    before = text[line_start:span.start]
    value = text[span.start:span.end]
    if _REGISTER_LABEL.search(before[-60:]) or _REGISTER_LABEL.match(value) and value[:1].isalpha():
        return not _PERSONAL.search(before)
    if span.entity not in _CONTACTS or _PERSONAL.search(before):
        return False
    block_start = _start_of_lines_above(text, line_start, 2)
    if any(block_start <= p.start < span.start and not _LEGAL_FORM.search(_line_of(text, p.start))
           for p in people):
        return False  # 'call Kat at 1-888-KAT-LAWN': a person's own number, toll-free or not
    if span.entity == _PHONE and is_service_number(value):
        return True
    labels = list(_ORG_LABEL.finditer(before))
    if labels and _LABEL_GAP.fullmatch(before[labels[-1].end():]):
        return True
    if span.entity == _ADDRESS and (_INSTITUTION_BEFORE.search(before[-80:])
                                    or _INSTITUTION_FIRST.match(value)):
        return True
    block = text[block_start:span.start]
    if _PERSONAL.search(block):
        return False
    if _LEGAL_FORM.search(block):
        return True
    lines_above = text[block_start:line_start].splitlines()
    return any(_TEAM_LINE.match(line.strip()) for line in lines_above)


def _is_role_mailbox(text: str, span: Span) -> bool:
    """An address whose local part names a role, not a person ('info@', 'service.client@',
    'noreply@', 'recruitment@'), unless a personal word precedes it on its line."""
    local = text[span.start:span.end].split("@", 1)[0].casefold()
    parts = [p for p in regex.split(r"[._\-+]", local) if p]
    if not parts or not all(p in _ROLE_WORDS for p in parts):
        return False
    line_start = text.rfind("\n", 0, span.start) + 1
    return not _PERSONAL.search(text[line_start:span.start])


def _line_of(text: str, at: int) -> str:
    end = text.find("\n", at)
    return text[text.rfind("\n", 0, at) + 1:len(text) if end < 0 else end]


def _start_of_lines_above(text: str, line_start: int, count: int) -> int:
    start = line_start
    for _ in range(count):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def is_service_number(value: str) -> bool:
    """True when phonenumbers reads `value` as a number of a type no person holds (toll-free,
    shared-cost): as written when international, else in the
    first of the most-used regions where it is valid."""
    digits = "".join(ch for ch in value if ch.isdigit() or ch == "+")
    if not 7 <= len(digits.lstrip("+")) <= 15:
        return False
    return _service_number(digits)


@lru_cache(maxsize=4096)
def _service_number(digits: str) -> bool:
    lib = phonenumbers
    regions: tuple[str | None, ...] = (None,) if digits.startswith("+") else _REGIONS
    service = {getattr(lib.PhoneNumberType, name) for name in _SERVICE_TYPES}
    for region in regions:
        try:
            parsed = lib.parse(digits, region)
        except lib.NumberParseException:
            continue
        if lib.is_valid_number(parsed):
            # The first region that reads it, most-used first (the phones detector's order).
            return lib.number_type(parsed) in service
    return False
