"""Training-only variety: records of labelled fields in many layouts, and values set inside
unrelated text, so the model learns labels and context rather than whole templates.

`field_record(maker, rng)` renders 2-6 fields (private ones among public ones) as key: value,
key=value, JSON, YAML, XML-ish or tab lines; `with_context(example, maker, rng)` puts PII-free
text before and/or after an example, shifting its labels.
"""

from __future__ import annotations

import random

from cacheprune.detectors.train.examples import Example, _filler, pick
from cacheprune.detectors.train.values import ValueMaker

# Label words per kind, in the training split's languages (forms add more in genres.py).
KEY_WORDS: dict[str, tuple[str, ...]] = {
    "PERSON": ("name", "full name", "customer", "patient", "owner", "holder", "contact",
               "employee", "passenger", "driver", "signed", "requester", "tenant", "guest",
               "Name", "Nombre", "Nom", "Naam", "Nazwisko", "Имя", "氏名", "姓名", "이름",
               "Họ tên", "नाम", "İsim", "Namn", "Jméno", "Όνομα", "Cognome", "Vorname"),
    "ADDRESS": ("address", "addr", "home address", "mailing address", "shipping_address",
                "Anschrift", "Adresse", "Dirección", "Indirizzo", "Adres", "Адрес", "住所",
                "地址", "주소", "Địa chỉ", "पता", "Endereço", "Adress"),
    "PHONE": ("phone", "tel", "mobile", "cell", "Telefon", "Téléphone", "Teléfono", "Телефон",
              "電話", "电话", "전화", "SĐT", "फ़ोन", "contact_number", "whatsapp"),
    "EMAIL": ("email", "e-mail", "mail", "Courriel", "Correo", "почта", "メール", "邮箱", "이메일"),
    "USERNAME": ("user", "username", "login", "uid", "handle", "account", "assignee", "author",
                 "nick", "Benutzer", "usuario", "utilisateur", "пользователь", "用户名",
                 "reviewer", "on_call", "github", "slack", "twitter"),
    "DATE_OF_BIRTH": ("dob", "date of birth", "born", "birthday", "birth_date", "Geburtstag",
                      "né le", "fecha nac.", "дата рождения", "生年月日", "出生日期", "생년월일",
                      "ngày sinh", "जन्मतिथि", "doğum tarihi"),
    "GOV_ID": ("ssn", "national id", "passport", "tax id", "ID-Nr.", "NIF", "PESEL", "ИНН",
               "身份证", "주민번호", "CCCD", "आधार", "TCKN", "personnummer"),
    "FINANCIAL": ("iban", "account", "acct", "sort code", "IFSC", "BSB", "routing", "card",
                  "Kontonummer", "cuenta", "compte", "счёт", "口座番号", "账号", "계좌"),
    "SECRET": ("password", "pwd", "api_key", "token", "secret", "Passwort", "contraseña",
               "mot de passe", "пароль", "密码", "비밀번호"),
    "IP_ADDRESS": ("ip", "client_ip", "src", "remote_addr", "IP-Adresse"),
    "MEDICAL_ID": ("mrn", "medical record", "insurance no.", "member id", "health card",
                   "Versichertennummer", "NSS", "полис", "保険証番号", "의료보험"),
    "LICENSE_PLATE": ("plate", "licence plate", "reg", "Kennzeichen", "matrícula",
                      "immatriculation", "targa", "госномер", "车牌", "번호판"),
    "PERSONAL_ID": ("employee no", "staff id", "student number", "badge", "vin", "imei",
                    "Personalnummer", "matricule", "legajo", "табельный номер", "学号"),
}
PUBLIC_FIELDS = (("id", "uuid"), ("created", "isodate"), ("status", "word"), ("count", "num"),
                 ("version", "version"), ("commit", "hex"), ("city_of_event", "city"),
                 ("company", "org"), ("product", "product"), ("updated_at", "isodate"),
                 ("runtime", "tool"), ("location", "room"), ("spec", "standard"),
                 ("coordinates", "coords"), ("release", "semver"), ("total", "money"),
                 ("ref", "order"), ("size", "measure"))
_VARIANTS = {"PERSON": ("full", "upper", "comma", "airline", "initials", "lower", "given",
                        "particle", "nick"),
             "ADDRESS": ("", "lower", "street", "sector"), "PHONE": ("", "", "spoken"),
             "PERSONAL_ID": ("", "vin", "imei"), "GOV_ID": ("", "passport"),
             "USERNAME": ("", "handle", "discord"), "SECRET": ("", "password")}
_LAYOUTS = ("{k}: {v}", "{k}={v}", '"{s}": "{v}"', "{k} - {v}", "<{s}>{v}</{s}>", "{k}\t{v}",
            "{s}: {v}", "{K}: {v}", "[{k}] {v}", "{k} {v}")
_JOINERS = ("\n", "\n", ", ", " | ", "; ", "  ", "&")


def field_record(maker: ValueMaker, rng: random.Random) -> Example:
    layout = pick(rng, _LAYOUTS)
    joiner = pick(rng, _JOINERS)
    fields: list[tuple[str, str, str | None]] = []
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.3:
            key, filler = PUBLIC_FIELDS[rng.randrange(len(PUBLIC_FIELDS))]
            fields.append((key, _filler(filler, maker), None))
        else:
            kind = pick(rng, tuple(KEY_WORDS))
            variant = pick(rng, _VARIANTS.get(kind, ("",)))
            fields.append((pick(rng, KEY_WORDS[kind]), maker.make(kind, variant).strip(), kind))
    text = ""
    spans: list[tuple[int, int, str]] = []
    for index, (key, value, field_kind) in enumerate(fields):
        if index:
            text += joiner
        line = layout.format(k=key, s=key.lower().replace(" ", "_"), K=key.upper(), v="\0")
        at = len(text) + line.index("\0")
        text += line.replace("\0", value)
        if field_kind is not None:
            spans.append((at, at + len(value), field_kind))
    if layout.startswith('"') and rng.random() < 0.7:
        text = "{" + text + "}"
        spans = [(a + 1, b + 1, k) for a, b, k in spans]
    return Example(text, spans, "fields", maker.locale, "train")


def with_context(example: Example, maker: ValueMaker, rng: random.Random) -> Example:
    # Public numbers and names next to private values: the model must tell them apart.
    context = ("sentence", "localtext", "public", "public")
    before = _filler(pick(rng, context), maker) if rng.random() < 0.7 else ""
    after = _filler(pick(rng, context), maker) if rng.random() < 0.5 else ""
    prefix = before + pick(rng, ("\n", " ", "\n\n")) if before else ""
    suffix = pick(rng, ("\n", " ")) + after if after else ""
    shift = len(prefix)
    return Example(prefix + example.text + suffix,
                   [(a + shift, b + shift, k) for a, b, k in example.spans],
                   example.genre, example.locale, example.split)
