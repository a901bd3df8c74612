"""The training split's genres: templates, the locales their values come from, and negatives.

`TRAIN_GENRES` maps a genre to templates (see `examples.render`); `form_templates` builds forms
from `FORM_LABELS` in 17 languages. `NEGATIVE_TEMPLATES` are PII-free texts of the same genres.
The held-out split (`heldout.py`) is written separately and shares none of these templates.
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.detectors.train.values import ValuePools

TRAIN_LOCALES = (
    "en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL", "pt_BR", "ru_RU",
    "ja_JP", "zh_CN", "ko_KR", "vi_VN", "hi_IN", "tr_TR", "sv_SE", "cs_CZ", "el_GR",
    # Second round: more scripts and countries (none of the held-out split's locales).
    "hu_HU", "bg_BG", "fa_IR", "bn_BD", "no_NO", "sk_SK", "hr_HR", "es_AR", "en_IE", "ka_GE",
    "hy_AM", "ta_IN", "az_AZ", "en_NZ", "sl_SI",
    # Third round: Arabic and Devanagari scripts, more Latin-script countries (still none of
    # the held-out split's).
    "ar_SA", "ne_NP", "de_CH", "fr_CH", "es_CL", "es_CO", "mk_MK", "lv_LV", "lt_LT",
    "et_EE", "is_IS",
)

TRAIN_POOLS = ValuePools(
    nicknames=("Bud", "Sunny", "Red", "Ace", "Mo", "Lefty", "Bea", "Jojo", "Tink", "Duke"),
    particles=("ap", "van der", "de la", "von", "bin", "da", "ní", "O'", "Mac", "al-", "dos"),
    mail_domains=("gmail.com", "outlook.com", "yahoo.co.uk", "web.de", "mail.ru", "qq.com",
                  "proton.me", "naver.com", "orange.fr", "libero.it"),
    handle_suffixes=("_dev", "42", "_x", ".admin", "99", "_ops"),
    medical_prefixes=("MRN ", "MRN-", "NHS-", "INS-", "MBR", "HCN ", "PT-", ""),
    staff_prefixes=("EMP-", "E", "STU-", "S", "ID-", "STF", "emp"),
    sectors=("Sector", "Block", "Phase", "Sec."),
    months_local=(
        ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
         "Oktober", "November", "Dezember"),
        ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre",
         "octobre", "novembre", "décembre"),
        ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre",
         "octubre", "noviembre", "diciembre"),
        ("tháng 1", "tháng 2", "tháng 3", "tháng 4", "tháng 5", "tháng 6", "tháng 7", "tháng 8",
         "tháng 9", "tháng 10", "tháng 11", "tháng 12"),
    ),
)

# name, address, phone, e-mail, date of birth, id number
FORM_LABELS: dict[str, tuple[str, str, str, str, str, str]] = {
    "en": ("Full name", "Address", "Phone", "Email", "Date of birth", "ID number"),
    "de": ("Name", "Anschrift", "Telefon", "E-Mail", "Geburtsdatum", "Ausweisnummer"),
    "fr": ("Nom complet", "Adresse", "Téléphone", "Courriel", "Date de naissance", "N° d'identité"),
    "es": ("Nombre", "Dirección", "Teléfono", "Correo", "Fecha de nacimiento", "DNI"),
    "it": ("Nome e cognome", "Indirizzo", "Telefono", "Email", "Data di nascita", "Codice"),
    "nl": ("Naam", "Adres", "Telefoon", "E-mail", "Geboortedatum", "BSN"),
    "pl": ("Imię i nazwisko", "Adres", "Telefon", "E-mail", "Data urodzenia", "PESEL"),
    "pt": ("Nome", "Endereço", "Telefone", "E-mail", "Data de nascimento", "CPF"),
    "ru": ("ФИО", "Адрес", "Телефон", "Эл. почта", "Дата рождения", "Паспорт"),
    "ja": ("氏名", "住所", "電話番号", "メール", "生年月日", "番号"),
    "zh": ("姓名", "地址", "电话", "邮箱", "出生日期", "身份证号"),
    "ko": ("성명", "주소", "전화번호", "이메일", "생년월일", "주민등록번호"),
    "vi": ("Họ và tên", "Địa chỉ", "Điện thoại", "Email", "Ngày sinh", "Số CCCD"),
    "hi": ("नाम", "पता", "फ़ोन", "ईमेल", "जन्म तिथि", "आधार"),
    "tr": ("Ad Soyad", "Adres", "Telefon", "E-posta", "Doğum tarihi", "TC Kimlik No"),
    "sv": ("Namn", "Adress", "Telefon", "E-post", "Födelsedatum", "Personnummer"),
    "cs": ("Jméno", "Adresa", "Telefon", "E-mail", "Datum narození", "Rodné číslo"),
    "el": ("Ονοματεπώνυμο", "Διεύθυνση", "Τηλέφωνο", "Email", "Ημερομηνία γέννησης", "ΑΔΤ"),
}


def form_templates(language: str) -> tuple[str, ...]:
    name, address, phone, email, dob, number = FORM_LABELS[language]
    return (
        f"{name}: {{PERSON:full}}\n{address}: {{ADDRESS}}\n{phone}: {{PHONE}}\n{email}: {{EMAIL}}",
        f"{name}: {{PERSON:full}}\n{dob}: {{DATE_OF_BIRTH}}\n{number}: {{GOV_ID}}",
        f"{name}：{{PERSON:full}}　{phone}：{{PHONE}}",
        f"{dob}: {{DATE_OF_BIRTH:dots}} | {name}: {{PERSON:upper}} | {address}: {{ADDRESS}}",
        f"[{name}] {{PERSON:full}}\n[{email}] {{EMAIL}}\n[{dob}] {{DATE_OF_BIRTH:iso}}",
    )


@dataclass(frozen=True, slots=True)
class Genre:
    templates: tuple[str, ...]
    lowercase_share: float = 0.0


TRAIN_GENRES: dict[str, Genre] = {
    "email": Genre((
        "Hi {PERSON:given},\n\nThanks for the update on {_product}. I'll send the numbers "
        "by {_time}.\n\nRegards,\n{PERSON:full}\n{_org}\n{PHONE}",
        "On {_isodate} at {_time}, {PERSON:full} <{EMAIL}> wrote:\n> Can we move the call?\n\n"
        "Sure, works for me.\n-- \n{PERSON:given}",
        "---------- Forwarded message ---------\nFrom: {PERSON:full} <{EMAIL}>\nTo: "
        "{PERSON:comma} <{EMAIL}>\nSubject: invoice {_num}\n\nPlease see attached.",
        "Dear {PERSON:title},\nyour parcel will be delivered to {ADDRESS} on {_isodate}.\n"
        "Best wishes,\n{PERSON:initial}",
        "{PERSON:given} here - I'm out until Monday. For urgent matters call {PHONE} or "
        "write to {EMAIL}.\nCheers, {PERSON:nick}",
        "Thanks all,\n{PERSON:initials}\nSenior Engineer | {_org}\nm: {PHONE}",
    )),
    "chat": Genre((
        "{PERSON:given_lower}: are you coming tonight?\nme: yes, text {PERSON:given_lower} "
        "my number is {PHONE}",
        "[{_time}] <{USERNAME}> deploy of {_version} done\n[{_time}] <{USERNAME}> thx "
        "{USERNAME:handle}",
        "hey its {PERSON:given_lower}, new address is {ADDRESS:lower}, come by saturday",
        "ok so {PERSON:lower} says the code is {SECRET:password} lol",
        "my email is {EMAIL:spoken} and my cell is {PHONE:spoken}",
        "can you ping {USERNAME:handle} and {USERNAME:handle} about the {_product} outage",
        "thanks {PERSON:given}! see you at {_time}",
    ), lowercase_share=0.6),
    "sms": Genre((
        "Hi {PERSON:given}, your appointment is on {_isodate} at {_time}. Reply STOP to opt out.",
        "{PERSON:given_lower} call me back on {PHONE} asap",
        "Your code for {_org} is {_num}. Do not share it.",
        "mum its {PERSON:given_lower}, lost my phone, this is my new number {PHONE}",
    ), lowercase_share=0.5),
    "record": Genre((
        "first_name,last_name,dob,email\n{PERSON:given},{PERSON:family},{DATE_OF_BIRTH:iso},"
        "{EMAIL}\n{PERSON:given},{PERSON:family},{DATE_OF_BIRTH:iso},{EMAIL}",
        '{{"name": "{PERSON:full}", "street": "{ADDRESS:street}", "city": "{ADDRESS:city}", '
        '"postcode": "{ADDRESS:postcode}", "phone": "{PHONE}", "id": "{_uuid}"}}',
        "customer:\n  name: {PERSON:full}\n  address:\n    street: {ADDRESS:street}\n    town: "
        "{ADDRESS:city}\n    zip: {ADDRESS:postcode}\n  iban: {FINANCIAL:iban}",
        '{{"employee_id": "{PERSONAL_ID}", "login": "{USERNAME}", "dob": "{DATE_OF_BIRTH}", '
        '"plate": "{LICENSE_PLATE}"}}',
        "id;name;phone;city\n{_num};{PERSON:upper};{PHONE};{ADDRESS:city}",
        "vehicle: {PERSONAL_ID:vin}\nowner: {PERSON:comma}\nplate: {LICENSE_PLATE}",
    )),
    "log": Genre((
        "{_isodate}T{_time}:07Z INFO auth login ok user={USERNAME} src={IP_ADDRESS}",
        "{_isodate} {_time} WARN sshd: Failed password for {USERNAME} from {IP_ADDRESS} port "
        "{_num}",
        "GET /api/v2/users/{USERNAME}/profile HTTP/1.1\nHost: api.example.com\nAuthorization: "
        "Bearer {SECRET}\nX-Forwarded-For: {IP_ADDRESS:v6}",
        "{_isodate} DEBUG request_id={_uuid} account={FINANCIAL:account} device_imei="
        "{PERSONAL_ID:imei}",
        "commit {_hex} Author: {PERSON:full} <{EMAIL}> fixed race in {_product}",
        "POST /login 200 username={USERNAME}&password={SECRET:password}",
    )),
    "transcript": Genre((
        "AGENT: Can I have your date of birth?\nCALLER: {DATE_OF_BIRTH:spelled}\nAGENT: "
        "And your postcode?\nCALLER: it's {ADDRESS:postcode}",
        "Speaker 1: my number is {PHONE:spoken}\nSpeaker 2: got it, and the email?\n"
        "Speaker 1: {EMAIL:spoken}",
        "Interviewer: please state your name.\n{PERSON:upper}: {PERSON:full}, I live at "
        "{ADDRESS:lower}",
        "[{_time}] Dr. {PERSON:family}: we discussed the results with {PERSON:given} today.",
    )),
    "letter": Genre((
        "RE: Claim {_num}\nOur client, {PERSON:full}, born {DATE_OF_BIRTH:long}, residing at "
        "{ADDRESS}, instructs us as follows.\nYours faithfully,\n{PERSON:full}",
        "Patient: {PERSON:comma}\nMRN: {MEDICAL_ID}\nDOB: {DATE_OF_BIRTH:abbrev}\nInsurance "
        "member no. {MEDICAL_ID}\nReferred by Dr {PERSON:family} for follow-up.",
        "To whom it may concern,\nI confirm that {PERSON:full} (student number {PERSONAL_ID}) "
        "attended our course in {_isodate}.",
        "Please pay the settlement to sort code {FINANCIAL:sort_code}, account "
        "{FINANCIAL:account}, name {PERSON:upper}.",
        "Beneficiary: {PERSON:full}\nIFSC: {FINANCIAL:ifsc}\nA/c: {FINANCIAL:account}\n"
        "Address: {ADDRESS:sector}",
        "BSB {FINANCIAL:bsb} account {FINANCIAL:account} ({PERSON:full}); routing "
        "{FINANCIAL:routing} for US transfers.",
    )),
    "ticket": Genre((
        "Ticket #{_num} opened by {PERSON:full} ({EMAIL}): card {FINANCIAL:card} was charged "
        "twice. Callback {PHONE}.",
        "Subject: cannot log in\nUser {USERNAME} on {IP_ADDRESS} gets error {_num} since "
        "{_isodate}. Passport {GOV_ID:passport} attached for verification.",
        "Customer {PERSON:airline} reports that vehicle {LICENSE_PLATE} (VIN {PERSONAL_ID:vin}) "
        "was towed.",
        "assignee: {USERNAME} | reporter: {PERSON:full} | IMEI {PERSONAL_ID:imei} | {_product}",
        "Hello, I am {PERSON:full}, my SSN is {GOV_ID} and DOB {DATE_OF_BIRTH:two_digit}.",
        "API key leaked in repo: {SECRET}. Rotated by {USERNAME:handle} on {_isodate}.",
    )),
}

# Second round: the first model found few free-form identifiers behind a label it had not seen
# together with the value's shape; more label phrasings per kind, in sentences.
ID_SENTENCES = Genre((
    "Could you update the record for staff member {PERSONAL_ID}? Their contract ends in {_year}.",
    "Matriculation no. {PERSONAL_ID} has not paid the {_money} fee yet.",
    "Werksausweis {PERSONAL_ID} wurde gesperrt, bitte neu ausstellen.",
    "The handset with serial/IMEI {PERSONAL_ID:imei} was reported lost on {_isodate}.",
    "Chassis number {PERSONAL_ID:vin}, first registered in {_year}, {_num} km.",
    "Health insurance card: {MEDICAL_ID}. Policy renews on {_isodate}.",
    "Please quote the hospital number {MEDICAL_ID} on every form.",
    "Numéro de sécurité sociale du patient : {MEDICAL_ID}",
    "Car reg {LICENSE_PLATE} was seen leaving the car park at {_time}.",
    "Matrícula del coche: {LICENSE_PLATE}. Multa de {_money}.",
    "the bike's plate is {LICENSE_PLATE} if u see it",
    "Delivery for flat 4: {ADDRESS}. Leave with a neighbour if nobody is in.",
    "Can you send the contract to my home, {ADDRESS:lower}?",
    "BSB {FINANCIAL:bsb}, acc no. {FINANCIAL:account}; sort code {FINANCIAL:sort_code} for the "
    "UK one.",
))
TRAIN_GENRES["ids"] = ID_SENTENCES

NEGATIVE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "docs": (
        "Resource {_uuid} was created on {_isodate}. Version {_version} deprecates the "
        "old endpoint; see the changelog.",
        "## Release {_version} ({_isodate})\n- Fixed a crash in {_product}\n- Bumped "
        "dependency to {_version}",
        "curl https://api.example.com/v1/projects/{_uuid}/builds?since={_isodate}",
        "The dataset snapshot {_hex} ({_isodate}) contains {_num} rows; schema id {_uuid}.",
    ),
    "prose": ("{_localtext}", "{_localtext} {_localtext}", "{_sentence} {_localtext}"),
    "email": (
        "Hi team,\n\nThe {_product} maintenance window moves to {_time} on {_isodate}. "
        "No action is needed.\n\nThanks,\nIT Operations",
        "Reminder: the quarterly review of {_org} starts at {_time}. Agenda attached.",
    ),
    "chat": (
        "anyone know why {_product} is slow today?", "lunch at {_time}? the place in {_city}",
        "build {_version} is green, merging", "lol that meeting could have been an email",
    ),
    "log": (
        "{_isodate}T{_time}:00Z INFO worker started pid={_num} version={_version}",
        "{_isodate} {_time} ERROR timeout after {_num} ms calling {_product} job={_uuid}",
    ),
    "ticket": (
        "Ticket #{_num}: {_product} returns error {_num} after upgrade to {_version}. "
        "Steps to reproduce attached.",
    ),
}
