"""The parts `compose.py` assembles: greetings, closings, reply headers, sentence frames around
names, addresses and dates of birth, chat and log lines with logins, identifier labels in many
languages. Placeholders: `%N%` a name, `%A%` an address, `%D%` a date of birth (the composer
picks the value's form); `{KIND}` and `{_filler}` fields as in `examples.render`.
"""

from __future__ import annotations

GREETINGS = (
    "Hi %N%,", "Hello %N%,", "Dear %N%,", "Hey %N%!", "%N%,", "Morning %N%,", "Good afternoon %N%,",
    "Hallo %N%,", "Liebe %N%,", "Sehr geehrter %N%,", "Bonjour %N%,", "Cher %N%,", "Hola %N%,",
    "Estimado %N%:", "Ciao %N%,", "Gentile %N%,", "Beste %N%,", "Cześć %N%,", "Dzień dobry %N%,",
    "Здравствуйте, %N%!", "Привет, %N%", "Hej %N%,", "Merhaba %N%,", "Olá %N%,", "Xin chào %N%,",
    "%N%さん、", "%N%님, 안녕하세요.", "%N%，你好：", "Hi all,", "Team,", "Hello everyone,",
    "Dobrý den, %N%,", "Γεια σου %N%,", "नमस्ते %N%,",
)
CLOSINGS = (
    "Regards,", "Best regards,", "Kind regards", "Thanks,", "Cheers,", "Best,", "Many thanks,",
    "Thank you,", "Warm wishes,", "Talk soon,", "Sincerely,", "Yours,", "Take care,", "--", "—",
    "Mit freundlichen Grüßen", "Viele Grüße,", "Beste Grüße", "Cordialement,", "Bien à vous,",
    "Saludos,", "Un saludo,", "Atentamente,", "Pozdrawiam,", "Z poważaniem", "С уважением,",
    "Cordiali saluti,", "Met vriendelijke groet,", "Groetjes,", "Med vänlig hälsning,",
    "Atenciosamente,", "Abraços,", "よろしくお願いします。", "此致 敬礼", "감사합니다.",
    "Trân trọng,", "Saygılarımla,", "S pozdravem,", "Με εκτίμηση,", "धन्यवाद,", "Thx", "ty!",
)
REPLY_HEADERS = (
    "On {_isodate} at {_time}, %N% <{EMAIL}> wrote:", "%N% <{EMAIL}> wrote:",
    "Am {_isodate} um {_time} schrieb %N% <{EMAIL}>:", "Le {_isodate} à {_time}, %N% a écrit :",
    "El {_isodate}, %N% <{EMAIL}> escribió:", "Il giorno {_isodate} %N% ha scritto:",
    "Op {_isodate} schreef %N% <{EMAIL}>:", "W dniu {_isodate} %N% <{EMAIL}> napisał:",
    "{_isodate}, %N% пишет:", "From: %N% [mailto:{EMAIL}]\nSent: {_isodate}\nSubject: RE: "
    "invoice", "-----Original Message-----\nFrom: %N%\nTo: {EMAIL}", "De : %N% <{EMAIL}>\n"
    "Envoyé : {_isodate}", "Von: %N% <{EMAIL}>\nGesendet: {_isodate}", "Od: %N%\nData: {_isodate}",
    "Begin forwarded message:\nFrom: %N% <{EMAIL}>", "> %N% wrote:", "Quoting %N%:",
    "Em {_isodate}, %N% escreveu:", "{_isodate} {_time}、%N% <{EMAIL}> のメッセージ:",
)
NEUTRAL_SENTENCES = (
    "Thanks for the quick reply.", "See the attached file.", "Let me know if that works.",
    "The meeting is moved to {_time}.", "I've updated the spreadsheet.", "No rush on this.",
    "We shipped version {_version} last night.", "Can we talk tomorrow?", "Sorry for the delay.",
    "The invoice for {_money} is attached.", "All good on our side.", "Quick question:",
    "Following up on my last email.", "Please review before Friday.", "Got it, thanks!",
    "Vielen Dank für die schnelle Antwort.", "Merci pour votre retour.", "Gracias por todo.",
    "Dziękuję za informację.", "Спасибо за ответ.", "Grazie mille.", "Bedankt voor je bericht.",
    "The build {_semver} is green.", "Room {_num} is booked.", "Ticket {_order} is closed.",
    "Our office is in {_place}.", "See {_ref} for details.", "It costs {_money}.",
)
NAME_FRAMES = (
    "%N% here.", "this is %N% from {_org}.", "It's %N%, your neighbour.", "%N% speaking.",
    "I spoke with %N% this morning.", "ask %N% about it", "%N% said it's fine",
    "cc'ing %N%, who owns this now.", "tell %N% i said hi", "with %N% and %N%",
    "%N% and %N% will join.", "according to %N%, it shipped", "%N%'s laptop is broken",
    "Please contact %N% if anything changes.", "I'm handing over to %N%.",
    "Attn: %N%", "c/o %N%", "Signed: %N%", "Witness: %N%", "approved by %N%",
    "(contact person: %N%)", "my sister %N% will pick it up", "%N% (our landlord) called",
    "Meet %N%, who joins us from {_org}.", "thanks %N%!!", "%N% - can you take this?",
    "Passenger %N% please proceed to gate {_num}", "%N% vs. {_org}", "Dr %N% will see you.",
    "Ich habe mit %N% gesprochen.", "J'ai parlé à %N% hier.", "Hablé con %N% ayer.",
    "Rozmawiałem z %N%.", "Я говорил с %N%.", "Ho sentito %N% stamattina.",
    "Tôi đã gặp %N% hôm qua.", "%N%さんに連絡しました。", "我已经告诉%N%了。",
    "%N% 씨에게 전화했어요.", "Aanvrager: %N%", "Hasta: %N%", "Pacjent: %N%",
)
ADDRESS_CUES = (
    "I live at %A%.", "we're at %A%", "ship to: %A%", "Deliver to %A%", "moved to %A% last month",
    "my place is %A%, come by", "send it to %A% pls", "Address: %A%", "addr: %A%",
    "Billing address:\n%A%", "Home: %A%", "residing at %A%", "c/o %A%", "Lieferadresse: %A%",
    "Wohnhaft: %A%", "Adresse de livraison : %A%", "Dirección de envío: %A%", "Adres: %A%",
    "Адрес доставки: %A%", "配送先：%A%", "收货地址：%A%", "배송지: %A%", "Địa chỉ: %A%",
    "पता: %A%", "Teslimat adresi: %A%", "Morada: %A%", "Indirizzo di casa: %A%",
    "the house at %A% is ours", "parcel left at %A%", "new addy %A%", "{_sentence} %A%",
)
SPLIT_ADDRESS_KEYS = (
    ("street", "city", "zip"), ("address_line1", "town", "postcode"), ("line1", "locality", "pc"),
    ("strasse", "ort", "plz"), ("rue", "ville", "code_postal"), ("calle", "ciudad", "cp"),
    ("ulica", "miasto", "kod"), ("улица", "город", "индекс"), ("addr1", "city", "postal"),
    ("street_address", "municipality", "postal_code"), ("via", "comune", "cap"),
    ("straat", "plaats", "postcode"), ("住所1", "市区町村", "郵便番号"), ("街道", "城市", "邮编"),
)
POSTCODE_KEYS = ("postcode", "zip", "ZIP code", "PLZ", "code postal", "CP", "kod pocztowy",
                 "индекс", "郵便番号", "邮编", "우편번호", "PIN code", "pincode", "Eircode",
                 "postal code", "Postleitzahl", "CEP")
DOB_CUES = (
    "DOB: %D%", "D.O.B. %D%", "dob %D%", "Date of birth: %D%", "born %D%", "b. %D%",
    "I was born on %D%.", "my birthday is %D%", "%N%, born %D%, lives in {_place}.",
    "%N% (DOB %D%)", "Birth date - %D%", "born on %D% in {_place}", "Geburtsdatum: %D%",
    "geb. %D%", "né le %D%", "née le %D%", "nacido el %D%", "fecha de nacimiento: %D%",
    "nata il %D%", "data urodzenia: %D%", "ur. %D%", "дата рождения: %D%", "род. %D%",
    "生年月日：%D%", "出生日期：%D%", "생년월일: %D%", "ngày sinh: %D%", "जन्म तिथि: %D%",
    "doğum tarihi: %D%", "geboren op %D%", "född %D%", "datum narození: %D%",
    "ημερομηνία γέννησης: %D%", "data de nascimento: %D%", "age 41 (born %D%)",
    "patient born %D%", "birthday %D% 🎂", "bday is %D%", "the date of birth on file is %D%",
)
USER_LINES: dict[str, tuple[str, ...]] = {
    "chat": (
        "@{USERNAME} can you check this?", "cc {USERNAME:handle}", "dm me, i'm {USERNAME} on "
        "discord", "my insta is {USERNAME:handle}", "ping {USERNAME:shaped} about it",
        "{USERNAME:handle} {USERNAME:handle} standup?", "add me: {USERNAME:shaped}",
        "call me {PHONE}", "omw, at {ADDRESS:lower}", "my gamertag is {USERNAME}",
        "thx {USERNAME:handle}!", "github is github.com/{USERNAME:shaped}",
        "follow {USERNAME:handle} on twitter", "u/{USERNAME} posted it", "%N% here lol",
    ),
    "log": (
        "user={USERNAME:shaped} action=login status=ok", "login ok for '{USERNAME}'",
        "Accepted publickey for {USERNAME:shaped} from {IP_ADDRESS} port {_num} ssh2",
        "sudo: {USERNAME:shaped} : TTY=pts/1 ; PWD=/srv ; USER=root ; COMMAND=/bin/systemctl",
        "pam_unix(sshd:session): session opened for user {USERNAME:shaped}",
        "[{USERNAME}] joined #general", "{USERNAME} has quit (Ping timeout)",
        "actor={USERNAME:shaped} event=repo.delete", '"username": "{USERNAME}"',
        "uid={USERNAME:shaped} gid=staff", "Author: {USERNAME}", "merged by {USERNAME:handle}",
        "path=/home/{USERNAME:shaped}/.ssh/authorized_keys changed",
        "C:\\Users\\{USERNAME:shaped}\\AppData\\Local\\Temp", "CORP\\{USERNAME:shaped} logged on",
        "{USERNAME:shaped}@buildhost:~$ make", "git clone git@github.com:{USERNAME}/tools.git",
        "GET /users/{USERNAME:shaped}/settings 200", "Cookie: uname={USERNAME}; lang=en",
        "account {USERNAME:shaped} locked after 5 attempts", "owner: {USERNAME} mode=0644",
        "reviewer={USERNAME:shaped} approved PR", "login={USERNAME:shaped}&next=/cart",
        "Failed password for invalid user {USERNAME} from {IP_ADDRESS}",
        "mail delivered to {EMAIL} for {USERNAME:shaped}", "assigned to @{USERNAME:shaped}",
    ),
    "neutral_log": (
        "worker {_num} started", "GC pause {_num}ms", "GET /health 200 {_num}ms",
        "connected to db on {_port}", "cache hit ratio {_percent}", "job {_uuid} finished",
        "user=root action=cron status=ok", "session opened for user postgres",
        "deploy {_semver} ok",
        "nginx: reload complete", "systemd: Started Daily apt upgrade.", "retrying in {_num}s",
    ),
}
# Free-form identifiers behind labels, per kind, in many languages.
ID_LABELS: dict[str, tuple[str, ...]] = {
    "PERSONAL_ID": (
        "employee number", "Employee ID", "staff no", "payroll number", "student ID",
        "student no.", "matric number", "badge", "customer number", "membership no",
        "Mitarbeiternummer", "Personalnummer", "Matrikelnummer", "Kundennummer",
        "numéro d'employé", "numéro étudiant", "n° client", "número de empleado", "legajo",
        "número de cliente", "numer pracownika", "numer albumu", "номер сотрудника",
        "студенческий билет", "社員番号", "学籍番号", "工号", "学号", "사번", "학번",
        "mã nhân viên", "MSSV", "कर्मचारी संख्या", "sicil no", "öğrenci no", "anställningsnummer",
        "osobní číslo", "matricola", "personeelsnummer", "studentnummer", "VIN",
        "Fahrgestellnummer", "numéro de châssis", "IMEI", "serial (IMEI)",
    ),
    "MEDICAL_ID": (
        "MRN", "medical record no", "patient ID", "hospital number", "chart #", "NHS number",
        "Medicare no", "insurance member ID", "health card", "policy holder no",
        "Krankenversichertennummer", "Patientennummer", "numéro de dossier", "n° de sécurité "
        "sociale", "número de historia clínica", "número de afiliación", "numer ubezpieczenia",
        "номер полиса ОМС", "診察券番号", "病历号", "의료보험번호", "mã bệnh nhân",
        "cartella clinica n.", "patiëntnummer", "SNS", "hasta no",
    ),
    "LICENSE_PLATE": (
        "plate", "reg", "registration", "licence plate", "number plate", "tag", "Kennzeichen",
        "plaque", "immatriculation", "matrícula", "placa", "targa", "kenteken", "rejestracja",
        "госномер", "номер машины", "ナンバー", "车牌号", "차량번호", "biển số xe", "plaka",
        "registreringsnummer", "SPZ", "πινακίδα",
    ),
    "GOV_ID": (
        "passport", "passport no", "national ID", "tax ID", "driver's licence no",
        "Reisepass", "Steuer-ID", "passeport", "pasaporte", "DNI", "paszport", "паспорт",
        "旅券番号", "护照号", "여권번호", "hộ chiếu", "pasaport",
    ),
    "FINANCIAL": (
        "sort code", "account no", "acct", "IFSC", "BSB", "routing number", "ABA", "transit no",
        "IBAN", "Kontonummer", "BLZ", "RIB", "número de cuenta", "CLABE", "numer konta",
        "расчётный счёт", "БИК", "口座番号", "账号", "계좌번호", "số tài khoản", "खाता संख्या",
        "card number", "hesap no",
    ),
    "USERNAME": (
        "username", "user name", "login", "user ID", "handle", "screen name", "Benutzername",
        "identifiant", "usuario", "nazwa użytkownika", "логин", "ユーザー名", "用户名",
        "아이디", "tên đăng nhập", "kullanıcı adı", "gamertag", "Slack", "GitHub",
    ),
}
CHAT_NEUTRAL = (
    "ok", "lol", "brb", "on it", "sounds good", "can't make it today sorry", "who has the keys?",
    "pushed the fix", "prod is down again", "coffee?", "haha yes", "running 10 min late",
    "did anyone see the game last night", "the wifi is so slow", "merging now",
    "tests pass locally", "see u at {_time}", "is {_product} down for anyone else?",
    "build {_semver} is out", "room {_num}, floor {_num}", "meeting moved to {_time}",
    "ja, passt", "d'accord", "vale, nos vemos", "ok, dzięki", "ладно", "好的", "알겠어요",
    "ok anh", "tamam", "happy friday!", "who broke main?", "can someone review PR {_num}",
)
# Log timestamps as services write them (`compose.py` and its negatives share them).
STAMPS = ("{_isodate}T{_time}:00Z ", "{_isodate} {_time} ", "[{_time}] ", "",
          "{_isodate}T{_time}Z ", "{_isodate}T{_time}:07.512Z ", "{_isodate}T{_time}:41+02:00 ",
          "{_isodate} {_time}:09,114 ", "[{_isodate} {_time}] ", "{_time}:33 ")
# What fills a name frame in PII-free twins: the same context, no person.
NOT_NAMES = (
    "the team", "everyone", "the vendor", "support", "the landlord's agent", "our lawyer",
    "the committee", "Finance", "the night shift", "Marketing", "the front desk", "nobody",
    "the board", "IT", "the council", "the new intern", "the client", "the other group",
    "Therefore", "However", "the authors", "the reviewers", "the model", "the baseline",
    "this approach", "the system", "the results", "the data", "the parser", "the committee chair",
    "the bakery", "the school", "the city", "the museum", "the library", "the airline",
    "Operations", "Legal", "Sales", "Procurement", "the warehouse", "the hotel", "the bank",
    "das Team", "l'équipe", "el equipo", "zespół", "команда", "チーム", "团队", "팀", "đội",
)
