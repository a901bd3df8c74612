"""Fifth round: the genres whose PII-free texts the fourth-round model masked most (e-mails, form
letters, JSON records, support tickets, web forms), each written twice from the same skeleton:
once with private values behind labels, once with the same labels left empty, masked by the
sender (`********`, `[redacted]`), holding a placeholder (`<username>`, `${DB_PASSWORD}`,
`[First Name]`) or a public value. What separates the twins is then the value, not the label or
the genre. The private labels lean on the kinds the fourth round reached least (personal ids,
secrets, usernames, medical ids), in many wordings and languages.

`TWIN_POSITIVES` and `TWIN_NEGATIVES` map a genre to a composer; `generate.py` adds them to the
composed positives and negatives.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from cacheprune.detectors.train.compose_public import organisation, service_number

# Label wordings per private kind, several languages; each maps to the kind's value forms.
_PRIVATE_LABELS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "PERSONAL_ID": (
        ("Employee ID", "Employee no.", "Staff number", "Staff ID", "Badge no.", "Badge #",
         "Personnel no.", "Student ID", "Student number", "Matriculation no.", "Personalnummer",
         "Mitarbeiter-Nr.", "Matrikelnummer", "N° d'employé", "Matricule", "Numéro étudiant",
         "Nº de empleado", "Legajo", "Matrícula", "Numero di matricola", "Personeelsnummer",
         "Studentnummer", "Numer pracownika", "Nr indeksu", "Табельный номер", "Anställningsnr",
         "社員番号", "学籍番号", "工号", "学号", "사번", "학번", "VIN", "Fahrgestellnummer",
         "Chassis no.", "IMEI", "Device IMEI", "Contractor ID", "Payroll no.", "Candidate no."),
        ("{PERSONAL_ID}", "{PERSONAL_ID:shaped}", "{PERSONAL_ID:coded}", "{PERSONAL_ID:coded}",
         "{PERSONAL_ID:vin}", "{PERSONAL_ID:imei}")),
    "MEDICAL_ID": (
        ("MRN", "Medical record no.", "Patient ID", "Patient number", "Hospital no.",
         "Chart #", "Member ID", "Insurance member no.", "Health plan ID", "Policy holder ID",
         "Medicare no.", "Subscriber ID", "Versichertennummer", "Patientennummer", "Fallnummer",
         "N° de dossier patient", "Numéro d'adhérent", "Nº historia clínica", "Nº de afiliado",
         "Cartella clinica n.", "Patiëntnummer", "Polisnummer", "Nr karty pacjenta",
         "Номер полиса ОМС", "診察券番号", "保険者番号", "病历号", "医保卡号", "환자번호",
         "Claim member ID"),
        ("{MEDICAL_ID}", "{MEDICAL_ID:shaped}", "{MEDICAL_ID:coded}", "{MEDICAL_ID:coded}")),
    "USERNAME": (
        ("Username", "User name", "Login", "Login ID", "User ID", "Account", "Handle",
         "Screen name", "Nickname", "Gamertag", "GitHub", "Slack", "Discord", "Telegram",
         "Instagram", "X / Twitter", "Benutzername", "Anmeldename", "Identifiant", "Pseudo",
         "Usuario", "Nombre de usuario", "Nome utente", "Gebruikersnaam", "Nazwa użytkownika",
         "Логин", "ユーザー名", "用户名", "아이디", "Kullanıcı adı"),
        ("{USERNAME}", "{USERNAME:shaped}", "{USERNAME:shaped}", "{USERNAME:handle}",
         "{USERNAME:discord}")),
    "SECRET": (
        ("Password", "Temporary password", "Passphrase", "PIN", "API key", "Access token",
         "Secret key", "Client secret", "Recovery code", "Wi-Fi password", "Passwort",
         "Kennwort", "Mot de passe", "Contraseña", "Senha", "Password iniziale", "Wachtwoord",
         "Hasło", "Пароль", "パスワード", "密码", "비밀번호", "One-time code", "Webhook secret"),
        ("{SECRET}", "{SECRET:password}", "{SECRET:shaped}", "{SECRET:shaped}")),
}
_OTHER_PRIVATE = (
    ("Name", "{PERSON:full}"), ("Full name", "{PERSON:full}"), ("Nom", "{PERSON:full}"),
    ("Phone", "{PHONE}"), ("Mobile", "{PHONE}"), ("E-mail", "{EMAIL}"),
    ("Address", "{ADDRESS}"), ("Date of birth", "{DATE_OF_BIRTH}"), ("IBAN", "{FINANCIAL}"),
)
# What a sender writes where a value is withheld, masked or not yet filled in.
_WITHHELD = (
    "", "", "********", "••••••••", "xxxxxxxx", "[redacted]", "[REDACTED]", "(hidden)", "N/A",
    "n/a", "-", "—", "none", "null", "not provided", "see the password manager",
    "sent separately", "(unchanged)", "<username>", "<your password>", "<employee_id>",
    "[First Name] [Last Name]", "[Your name]", "{{username}}", "{{ patient_id }}", "${db_password}",
    "$API_KEY", "%USERNAME%", "<YOUR_API_KEY>", "your-token-here", "XXXX-XXXX", "***-**-****",
    "(auto-assigned)", "to be confirmed", "à compléter", "nicht angegeben", "sin datos", "未填写",
)
_PUBLIC_FIELDS = (
    ("Department", ("Finance", "IT", "Human Resources", "Logistics", "Radiology", "Admissions")),
    ("Category", ("Billing", "Access request", "Hardware", "Network", "Shipping", "Other")),
    ("Priority", ("Low", "Medium", "High", "P2", "P3", "urgent")),
    ("Status", ("Open", "Pending", "Resolved", "In progress", "closed", "Awaiting reply")),
    ("Ticket", ("#{_num}", "INC{_num}", "REQ-{_num}", "CS-{_num}")),
    ("Reference", ("REF-{_num}", "{_hex}", "ORD-{_num}", "Q{_num}/{_num}")),
    ("Order no.", ("{_num}", "#{_num}-{_num}", "SO-{_num}")),
    ("Product", ("{_product}", "Model X{_num}", "Router AX{_num}", "Plan Basic")),
    ("Version", ("{_version}", "v{_version}", "build {_num}")),
    ("Date", ("{_isodate}", "{_isodate} {_time}", "today")),
    ("Site", ("{_city}", "Building {_num}", "Head office", "Warehouse {_num}")),
    ("Room", ("{_num}", "B-{_num}", "Lab {_num}")), ("Amount", ("{_money}", "EUR {_num}.00")),
    ("Team", ("Platform", "Service Desk", "Ward {_num}", "Payroll", "Team Phoenix")),
    ("Abteilung", ("Vertrieb", "Buchhaltung", "Einkauf")), ("Statut", ("Ouvert", "Fermé")),
    ("Estado", ("Abierto", "Cerrado")), ("Categorie", ("Facturatie", "Levering")),
    ("Attachment", ("screenshot.png", "invoice_{_num}.pdf", "log.txt")),
    ("Consent", ("[x] I agree to the terms", "yes", "[ ] subscribe to the newsletter")),
)
_JSON_PRIVATE_KEYS = {
    "PERSONAL_ID": ("employee_id", "staffNo", "student_id", "badge", "vin", "imei",
                    "personnel_number", "matricule"),
    "MEDICAL_ID": ("mrn", "patientId", "member_id", "insurance_no", "chart_number"),
    "USERNAME": ("username", "login", "user", "handle", "screen_name", "owner_login"),
    "SECRET": ("password", "api_key", "token", "client_secret", "pin", "passphrase"),
}
_JSON_PUBLIC = (
    ("id", "{_num}"), ("sku", "SKU-{_hex}"), ("status", "active"), ("status", "shipped"),
    ("created_at", "{_isodate}T{_time}:00Z"), ("updated_at", "{_isodate}"), ("region", "eu-west"),
    ("count", "{_num}"), ("price", "{_money}"), ("currency", "EUR"), ("version", "{_version}"),
    ("build", "{_num}"), ("department", "Finance"), ("team", "platform"), ("title", "{_word}"),
    ("url", "https://docs.example.org/{_word}"), ("request_id", "{_uuid}"), ("tags", "[]"),
    ("city", "{_city}"), ("enabled", "true"), ("plan", "pro"), ("room", "B{_num}"),
)
_GREETINGS_PUBLIC = ("Dear Customer,", "Dear Sir or Madam,", "Dear colleagues,", "Hi team,",
                     "Hello all,", "Dear [First Name],", "Dear {{first_name}},", "Dear member,",
                     "Dear patient,", "Sehr geehrte Damen und Herren,", "Madame, Monsieur,",
                     "Estimado cliente:", "Geachte klant,", "Szanowni Państwo,", "お客様各位",
                     "尊敬的客户：", "고객님께,", "To whom it may concern,", "Hi there,")
_GREETINGS_PRIVATE = ("Dear {PERSON:full},", "Hi {PERSON:given},", "Dear Mr {PERSON:family},",
                      "Dear Ms {PERSON:family},", "Hallo {PERSON:given},",
                      "Bonjour {PERSON:given},",
                      "Hola {PERSON:given}:", "Beste {PERSON:given},", "{PERSON:full}様",
                      "{PERSON:given},")
_SIGN_PUBLIC = ("Kind regards,\nThe Service Desk", "Best,\nThe Team", "Regards,\nIT Support",
                "Mit freundlichen Grüßen\nIhr Kundenservice", "Cordialement,\nLe service client",
                "Saludos,\nEl equipo de soporte", "Met vriendelijke groet,\nKlantenservice",
                "Thanks,\nPayroll", "-- \nThis is an automated message, please do not reply.",
                "Sincerely,\n[Your Name]\n[Title]", "Regards,\nAdmissions Office")
_SIGN_PRIVATE = ("Kind regards,\n{PERSON:full}", "Best,\n{PERSON:given}",
                 "Thanks,\n{PERSON:full}\n{PHONE}", "Mit freundlichen Grüßen\n{PERSON:full}",
                 "Cordialement,\n{PERSON:full}", "Saludos,\n{PERSON:full}", "-- \n{PERSON:full}")
_BODIES = (
    "As requested, here are the account details for the new starter.",
    "Please find the registration details below.", "Your access has been set up.",
    "The form below was submitted on our website.", "Your claim has been received.",
    "We have updated your record as follows.", "The details we hold are listed below.",
    "Please check the following and reply if anything is wrong.",
    "Below is a summary of your request.", "Anbei die Zugangsdaten.",
    "Veuillez trouver ci-dessous les informations demandées.",
    "A continuación encontrará los datos solicitados.", "Hieronder vindt u de gegevens.",
)
_INTROS_LETTER = (
    "We are writing to confirm the details of your enrolment.",
    "This letter confirms the changes to your membership.",
    "Following your visit, we have opened a file under the reference below.",
    "Your application has been processed.", "Thank you for registering with us.",
    "We refer to your recent correspondence.", "Please keep this letter for your records.",
)
_SEPARATORS = (": ", ": ", " - ", "\t", ": ", " = ", "：")


def _field(rng: random.Random, private: bool, kind: str | None = None) -> tuple[str, str]:
    """(label, value): a private kind's label with a value or, for the PII-free twin, withheld."""
    if kind is None and (not private or rng.random() < 0.7):
        kind = rng.choice(tuple(_PRIVATE_LABELS))
    if kind is None:
        return rng.choice(_OTHER_PRIVATE)
    labels, values = _PRIVATE_LABELS[kind]
    label = rng.choice(labels)
    if private:
        return label, rng.choice(values)
    return label, rng.choice(_WITHHELD)


def _public_field(rng: random.Random) -> tuple[str, str]:
    label, values = rng.choice(_PUBLIC_FIELDS)
    return label, rng.choice(values)


def _fields(rng: random.Random, private: bool) -> list[tuple[str, str]]:
    """Some public fields and some private-kind fields, private or withheld, in random order."""
    rows = [_public_field(rng) for _ in range(rng.randint(1, 4))]
    rows += [_field(rng, private) for _ in range(rng.randint(1, 3))]
    if not private and rng.random() < 0.5:  # forms whose private fields were not asked for
        rows = [row for row in rows if row[0] not in _all_private_labels()] or rows
    rng.shuffle(rows)
    return rows


def _all_private_labels() -> set[str]:
    return {label for labels, _ in _PRIVATE_LABELS.values() for label in labels}


def _lines(rows: list[tuple[str, str]], rng: random.Random) -> str:
    separator = rng.choice(_SEPARATORS)
    bullet = rng.choice(("", "", "- ", "* ", "• "))
    return "\n".join(f"{bullet}{label}{separator}{value}".rstrip() for label, value in rows)


def twin_email(rng: random.Random, private: bool) -> str:
    greeting = rng.choice(_GREETINGS_PRIVATE if private and rng.random() < 0.6
                          else _GREETINGS_PUBLIC)
    signature = rng.choice(_SIGN_PRIVATE if private and rng.random() < 0.5 else _SIGN_PUBLIC)
    parts = [greeting, rng.choice(_BODIES), _lines(_fields(rng, private), rng), signature]
    if rng.random() < 0.4:
        parts.append(f"{organisation(rng)} | {service_number(rng)}")
    if rng.random() < 0.3:
        parts.insert(0, f"Subject: {rng.choice(('Your account', 'Access details', 'Re: request', 'Claim update', 'Welcome'))} #{{_num}}")  # noqa: E501
    return "\n\n".join(parts)


def twin_letter(rng: random.Random, private: bool) -> str:
    header = organisation(rng) + "\n" + rng.choice(("{_city}, {_isodate}", "Date: {_isodate}",
                                                    "{_isodate}", "Our ref: REF-{_num}"))
    recipient = (rng.choice(("{PERSON:full}\n{ADDRESS:lines}", "{PERSON:full}", "")) if private
                 else rng.choice(("[Name]\n[Address line 1]\n[Postcode] [Town]",
                                  "The Occupier", "All staff", "")))
    greeting = rng.choice(_GREETINGS_PRIVATE if private and rng.random() < 0.5
                          else _GREETINGS_PUBLIC)
    body = rng.choice(_INTROS_LETTER) + "\n\n" + _lines(_fields(rng, private), rng)
    closing = rng.choice(("If any detail is wrong, call us on " + service_number(rng) + ".",
                          "Please bring this letter to your appointment.",
                          "You can change these details online at any time.", ""))
    signature = rng.choice(_SIGN_PUBLIC)
    return "\n\n".join(p for p in (header, recipient, greeting, body, closing, signature) if p)


def twin_json(rng: random.Random, private: bool) -> str:
    items = [rng.choice(_JSON_PUBLIC) for _ in range(rng.randint(2, 5))]
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(tuple(_JSON_PRIVATE_KEYS))
        key = rng.choice(_JSON_PRIVATE_KEYS[kind])
        if private:
            items.append((key, rng.choice(_PRIVATE_LABELS[kind][1])))
        else:
            items.append((key, rng.choice(("", "null", "***", "[redacted]", "$SECRET_TOKEN",
                                           "<redacted>", "REDACTED", "xxxx", "n/a"))))
    rng.shuffle(items)
    indent = rng.choice(("", "\n  "))
    body = ("," + (indent or " ")).join(
        f'"{key}": {value}' if value in ("null", "true", "[]") else f'"{key}": "{value}"'
        for key, value in items)
    text = "{" + indent + body + ("\n" if indent else "") + "}"
    if rng.random() < 0.3:
        text = rng.choice(("POST /api/v2/accounts 201\n", "response: ", "payload=",
                           "[INFO] saved record ", "curl -d '")) + text
    return text


def twin_ticket(rng: random.Random, private: bool) -> str:
    summary = rng.choice(("Cannot log in to the portal", "Password reset request",
                          "Badge not working at gate {_num}", "Update my insurance details",
                          "New starter account", "Locked out after update to {_version}",
                          "Wrong member number on invoice", "VPN access for contractor"))
    rows = [("Summary", summary)] + _fields(rng, private)
    description = rng.choice((
        "User reports the error since this morning.", "Steps: open the app, sign in, see error "
        "{_num}.", "Requested by the line manager.", "Affects {_num} users in {_city}.",
        "Please reset and send the new credentials by SMS.", "Duplicate of #{_num}?"))
    if private and rng.random() < 0.4:
        description = rng.choice((
            "{PERSON:full} cannot sign in as {USERNAME:shaped}.",
            "Reset for {USERNAME}; temporary password {SECRET:shaped} given by phone.",
            "Patient {MEDICAL_ID:coded} called about the bill.",
            "Staff no. {PERSONAL_ID:coded} starts Monday.",
            "her login is {USERNAME:shaped}, employee {PERSONAL_ID:shaped}"))
    return _lines(rows, rng) + "\n\n" + rng.choice(("Description:\n", "Notes: ", "")) + description


def twin_webform(rng: random.Random, private: bool) -> str:
    title = rng.choice(("Contact form", "Registration", "Create your account",
                        "Patient intake form", "Staff access request", "Kontaktformular",
                        "Formulaire d'inscription", "Formulario de contacto", "Aanmeldformulier",
                        "Support request", "Claim form"))
    rows = _fields(rng, private)
    if private and rng.random() < 0.5:
        rows.append(rng.choice(_OTHER_PRIVATE))
    elif not private and rng.random() < 0.5:
        rows.append((rng.choice(("Name", "Full name", "Phone", "E-mail", "Address")),
                     rng.choice(_WITHHELD)))
    lines = _lines(rows, rng)
    tail = rng.choice(("[Submit]", "[ Send ]", "Submitted {_isodate} {_time}",
                       "* required fields", "Captcha: passed", ""))
    return f"{title}\n{'=' * len(title) if rng.random() < 0.3 else ''}\n{lines}\n{tail}".strip()


_GENRES: dict[str, Callable[[random.Random, bool], str]] = {
    "email": twin_email, "letter": twin_letter, "json": twin_json, "ticket": twin_ticket,
    "webform": twin_webform,
}
TWIN_POSITIVES: dict[str, Callable[[random.Random], str]] = {
    f"twin_{genre}": (lambda rng, make=make: make(rng, True)) for genre, make in _GENRES.items()}
TWIN_NEGATIVES: dict[str, Callable[[random.Random], str]] = {
    f"twin_{genre}": (lambda rng, make=make: make(rng, False)) for genre, make in _GENRES.items()}
