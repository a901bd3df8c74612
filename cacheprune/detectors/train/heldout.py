"""The held-out split: templates written apart from the training ones, from a genre list only.

NOTE: written by the same author as `genres.py` (not by someone who never saw the rules), from
the issue's description of genres and families, without reusing a training template, locale or
pool. It measures generalization to new wordings and new locales, not to a new author.
"""

from __future__ import annotations

from cacheprune.detectors.train.genres import Genre
from cacheprune.detectors.train.values import ValuePools

HELDOUT_LOCALES = (
    "en_AU", "en_IN", "en_CA", "de_AT", "fr_CA", "es_MX", "pt_PT", "uk_UA", "zh_TW", "nl_BE",
    "da_DK", "fi_FI", "ro_RO", "id_ID", "th_TH", "he_IL",
)

HELDOUT_POOLS = ValuePools(
    nicknames=("Chip", "Smiley", "Boots", "Ziggy", "Pip", "Coco"),
    particles=("ab", "ter", "del", "zu", "bint", "Fitz", "di"),
    mail_domains=("icloud.com", "hotmail.fr", "gmx.at", "ukr.net", "yahoo.com.tw",
                  "bigpond.com", "rediffmail.com"),
    handle_suffixes=("_", "007", "-dev", ".ops"),
    medical_prefixes=("MR#", "", "HIC-", "UR"),
    staff_prefixes=("Staff #", "Emp No. ", "Matric ", "B"),
    sectors=("Sector-", "Pocket", "Block-"),
    months_local=(
        ("Jänner", "Feber", "März", "April", "Mai", "Juni", "Juli", "August", "September",
         "Oktober", "November", "Dezember"),
        ("जनवरी", "फ़रवरी", "मार्च", "अप्रैल", "मई", "जून", "जुलाई", "अगस्त", "सितंबर",
         "अक्टूबर", "नवंबर", "दिसंबर"),
        ("ianuarie", "februarie", "martie", "aprilie", "mai", "iunie", "iulie", "august",
         "septembrie", "octombrie", "noiembrie", "decembrie"),
    ),
)

HELDOUT_GENRES: dict[str, Genre] = {
    "email": Genre((
        "Morning,\nattached is the signed lease. Shout if anything is missing.\n\n"
        "Kind regards\n{PERSON:full}",
        "> On {_isodate}, {PERSON:full} <{EMAIL}> wrote:\n> any news on the refund?\n"
        "Not yet, chasing it today. -{PERSON:given}",
        "Hello {PERSON:nick}, this is {PERSON:given} from accounts. Your new login is "
        "{USERNAME} and the temporary password {SECRET:password}.",
        "From: {PERSON:airline}\nSent: {_isodate}\nCc: {PERSON:comma}\nPlease forward to "
        "{PERSON:particle}.",
    )),
    "chat": Genre((
        "{PERSON:given_lower} here!! moved to {ADDRESS:lower} last week",
        "who's on call? {USERNAME:handle} or {USERNAME:handle}? pager says {USERNAME}",
        "text {PERSON:given} on {PHONE:spoken} she knows",
        "gg {USERNAME:discord} see u tmrw",
    ), lowercase_share=0.7),
    "form": Genre((
        "Applicant surname / given names: {PERSON:airline}\nResidential address: {ADDRESS}\n"
        "Birth date: {DATE_OF_BIRTH:abbrev}",
        "Ім'я: {PERSON:full}\nАдреса: {ADDRESS}\nТел.: {PHONE}",
        "姓名 {PERSON:full}  住址 {ADDRESS}  生日 {DATE_OF_BIRTH:iso}",
        "Nama: {PERSON:full} | Alamat: {ADDRESS} | HP: {PHONE}",
        "Navn: {PERSON:full}; Fødselsdato: {DATE_OF_BIRTH:dots}; CPR: {GOV_ID}",
        "Kenteken / Nummerplaat: {LICENSE_PLATE}, bestuurder {PERSON:full}",
    )),
    "record": Genre((
        '[{{"given": "{PERSON:given}", "surname": "{PERSON:family}", "line1": '
        '"{ADDRESS:street}", "suburb": "{ADDRESS:city}", "pc": "{ADDRESS:postcode}"}}]',
        "holder|bsb|acct|medicare\n{PERSON:upper}|{FINANCIAL:bsb}|{FINANCIAL:account}|"
        "{MEDICAL_ID}",
        "- staff_no: {PERSONAL_ID}\n  handle: {USERNAME}\n  born: {DATE_OF_BIRTH:two_digit}",
    )),
    "log": Genre((
        "{_isodate} {_time} audit: {USERNAME} changed role of {USERNAME} (from {IP_ADDRESS})",
        "Cookie: session={SECRET}; user={USERNAME}\nReferer: https://shop.example.org/cart",
        "device registered imei={PERSONAL_ID:imei} owner={EMAIL} ip={IP_ADDRESS:v6}",
    )),
    "transcript": Genre((
        "OPERATOR: and the date of birth?\nCUSTOMER: um, {DATE_OF_BIRTH:spelled}\nOPERATOR: "
        "thanks, and a contact number\nCUSTOMER: {PHONE:spoken}",
        "Q. State your full name for the record.\nA. {PERSON:full}.\nQ. Your address?\nA. "
        "{ADDRESS}.",
    )),
    "letter": Genre((
        "Re: {PERSON:comma}, UR number {MEDICAL_ID}, DOB {DATE_OF_BIRTH:local}.\n"
        "Thank you for referring this patient.",
        "Remittance: IFSC {FINANCIAL:ifsc}, account {FINANCIAL:account}, payee "
        "{PERSON:initials}, {ADDRESS:sector}",
        "Sort code {FINANCIAL:sort_code} / acc {FINANCIAL:account} / ref {_num}",
        "The vehicle {LICENSE_PLATE}, chassis {PERSONAL_ID:vin}, is registered to "
        "{PERSON:full}, national id {GOV_ID}.",
    )),
    "ticket": Genre((
        "Case {_num} - {PERSON:upper} ({EMAIL}) says her card {FINANCIAL:card} is blocked; "
        "routing {FINANCIAL:routing}.",
        "Reporter: {USERNAME:handle}\nAffected IP: {IP_ADDRESS}\nKey in log: {SECRET}",
    )),
}

HELDOUT_NEGATIVES: dict[str, tuple[str, ...]] = {
    "docs": (
        "Bucket {_uuid} is public. Last sync {_isodate}; release {_version}.",
        "See issue {_num}: since {_isodate} the endpoint /v3/items/{_uuid} returns 410.",
    ),
    "prose": (
        "Der Zug nach {_city} hatte heute wieder Verspätung, aber das Wetter war schön und "
        "wir haben den Nachmittag am See verbracht.",
        "W przyszłym tygodniu zaczynamy remont kuchni, więc obiad zjemy u sąsiadów albo w "
        "barze mlecznym.",
        "Hôm nay trời mưa to nên chúng tôi ở nhà đọc sách và nấu một nồi phở thật ngon.",
        "La reunión se aplazó hasta el jueves porque faltaban los informes del trimestre.",
        "Il progetto è stato approvato dal comitato e i lavori inizieranno in primavera.",
        "Завтра будет холодно, поэтому возьми тёплую куртку и зонт.",
        "今天的会议改到下午三点，请大家提前准备材料。",
        "{_localtext}",
    ),
    "chat": ("ok cool, see u at the standup", "does {_product} work for anyone else?"),
    "log": ("{_isodate}T{_time}Z GC pause {_num}ms heap={_num}MB build={_hex}",),
}
