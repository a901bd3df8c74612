"""Fourth round: positive texts of the families the third-round model missed most, assembled
from parts: lower-case chats and SMS with given names and handles, usernames and handles in
any context and behind labels in many languages, spoken values in call transcripts (plates,
member and staff numbers read aloud), texts in Chinese, Japanese, Korean, Dutch and other
languages with values behind their own labels, and secrets in configuration, URLs and after
password labels. `VOICE_COMPOSERS` maps a genre to its composer; `local_text(rng, language)`
writes a text in one language (`generate.py` picks a value maker of that language for it).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from cacheprune.detectors.train.compose_parts import CHAT_NEUTRAL

_GIVEN = ("{PERSON:given_lower}", "{PERSON:given_lower}", "{PERSON:given}", "{PERSON:lower}",
          "{PERSON:nick}")
_HANDLE = ("{USERNAME}", "{USERNAME:shaped}", "{USERNAME:handle}", "{USERNAME:discord}",
           "@{USERNAME:shaped}")
_CHAT_LINES = (
    "%G% is off today", "i'll ask %G% tmrw", "%G% and %G% are coming later", "tell %G% to call me",
    "did %G% reply??", "%G% says hi", "lol %G% forgot the keys again", "can u pick up %G% at 6",
    "omg %G% got the job!!", "%G% pls check ur email", "with %G% at the cafe rn",
    "%G%'s number is {PHONE}", "text %G% on {PHONE}", "%G% moved to {ADDRESS:lower}",
    "%U% can you review this", "ping %U% about the deploy", "%U% pushed a fix", "thx %U% 🙏",
    "%U% is on call this week", "ask %U%, they own it", "dm %U%", "cc %U% %U%",
    "assigned to %U%", "%U% left the channel", "added %U% to the group", "%U%: lgtm",
    "hey its %G%, new number {PHONE}", "my bday is {DATE_OF_BIRTH:short} btw", "ok %G%",
    "%G% said she'd come", "%G% said he'd be late", "meet %G% at {ADDRESS:lower}",
)
_HANDLE_FRAMES = (
    "the commit was pushed by %U%", "PR by %U%, approved by %U%", "reported by %U% in #general",
    "as %U% wrote yesterday", "u/{USERNAME} posted the guide", "(via %U%)", "%U% opened this issue",
    "Steam: {USERNAME}", "IG: {USERNAME:handle}", "tiktok {USERNAME:handle}",
    "Telegram: {USERNAME:handle}", "Skype: live:{USERNAME}", "my discord is {USERNAME:discord}",
    "find me on github, I'm {USERNAME:shaped}", "login failed for {USERNAME:shaped}",
    "the account {USERNAME:shaped} was disabled", "owner: {USERNAME:shaped}",
    "reviewers: %U%, %U%", "blame says {USERNAME:shaped} changed it",
    "ssh {USERNAME:shaped}@bastion",
    "/home/{USERNAME:shaped}/projects", "mention %U% in the notes", "thanks to %U% for the patch",
    "gebruiker {USERNAME:shaped} is geblokkeerd", "l'utilisateur {USERNAME:shaped} s'est connecté",
    "der Benutzer {USERNAME:shaped} wurde gesperrt", "el usuario {USERNAME:shaped} no existe",
    "用户 {USERNAME:shaped} 已登录", "사용자 {USERNAME:shaped} 로그인 실패",
    "ユーザー {USERNAME:shaped} がログインしました",
)
_USER_LABELS = (
    "gebruikersnaam", "nom d'utilisateur", "nome utente", "nome de usuário", "användarnamn",
    "uživatelské jméno", "Anmeldename", "Benutzerkennung", "имя пользователя", "ユーザーID",
    "사용자 이름", "用户名", "登录名", "账号", "login", "nick", "account name", "user id", "alias",
    "pseudo", "apodo", "kullanıcı adı", "felhasználónév", "käyttäjätunnus",
)
_SPOKEN = (
    ("and the registration of the car?", "{LICENSE_PLATE:spoken}"),
    ("your membership number?", "{MEDICAL_ID:spoken}"), ("staff number?", "{PERSONAL_ID:spoken}"),
    ("a number to call you back on?", "{PHONE:spoken2}"), ("and your email?", "{EMAIL:spoken2}"),
    ("date of birth?", "{DATE_OF_BIRTH:words}"), ("the postcode there?", "{ADDRESS:postcode}"),
    ("and the first line of the address?", "{ADDRESS:spoken}"),
    ("who am I speaking with?", "{PERSON:lower}"), ("and your first name?", "{PERSON:given_lower}"),
    ("the account number?", "{FINANCIAL:spoken}"), ("your user name on the portal?",
                                                    "{USERNAME:shaped}"),
)
_LOCAL: dict[str, tuple[str, ...]] = {
    "zh": ("我叫{PERSON:full}，手机号{PHONE}。", "联系人：{PERSON:full}  电话：{PHONE}",
           "收件人：{PERSON:full}\n地址：{ADDRESS}", "出生日期：{DATE_OF_BIRTH:cjk}",
           "身份证号：{GOV_ID}", "病历号：{MEDICAL_ID:shaped}", "员工编号：{PERSONAL_ID:shaped}",
           "车牌号：{LICENSE_PLATE}", "银行卡号：{FINANCIAL:card}", "微信号：{USERNAME}",
           "用户名：{USERNAME:shaped}", "请联系{PERSON:full}，电话{PHONE}。", "{PERSON:full}先生您好，",  # noqa: E501 (CJK text)
           "{PERSON:full}女士，您的订单已发货。", "我和{PERSON:full}昨天见面了。", "住址：{ADDRESS}",  # noqa: E501 (CJK text)
           "学号：{PERSONAL_ID:shaped}", "医保卡号：{MEDICAL_ID}"),
    "ja": ("{PERSON:full}と申します。電話は{PHONE}です。", "氏名：{PERSON:full}", "住所：{ADDRESS}",
           "生年月日：{DATE_OF_BIRTH:cjk}", "社員番号：{PERSONAL_ID:shaped}", "診察券番号：{MEDICAL_ID}",  # noqa: E501 (CJK text)
           "ユーザー名：{USERNAME:shaped}", "{PERSON:full}様\nいつもお世話になっております。",
           "担当の{PERSON:family}です。", "口座番号：{FINANCIAL:account}", "車両番号：{LICENSE_PLATE}"),  # noqa: E501 (CJK text)
    "ko": ("제 이름은 {PERSON:full}입니다. 전화번호는 {PHONE}예요.", "성명: {PERSON:full}",
           "주소: {ADDRESS}", "생년월일: {DATE_OF_BIRTH:cjk}", "사번: {PERSONAL_ID:shaped}",
           "환자번호: {MEDICAL_ID:shaped}", "아이디: {USERNAME:shaped}", "{PERSON:full}님, 안녕하세요.",  # noqa: E501 (CJK text)
           "{PERSON:full} 씨에게 연락해 주세요.", "계좌번호: {FINANCIAL:account}",
           "차량번호: {LICENSE_PLATE}", "회원번호 {PERSONAL_ID}", "담당자: {PERSON:full} ({PHONE})"),  # noqa: E501 (CJK text)
    "nl": ("Mijn naam is {PERSON:full} en ik woon op {ADDRESS}.", "Bel me op {PHONE}.",
           "geboortedatum: {DATE_OF_BIRTH:dots}", "BSN: {GOV_ID}", "kenteken {LICENSE_PLATE}",
           "patiëntnummer {MEDICAL_ID:shaped}", "personeelsnummer: {PERSONAL_ID:shaped}",
           "klantnummer {PERSONAL_ID}", "gebruikersnaam: {USERNAME:shaped}",
           "rekeningnummer {FINANCIAL:iban}", "Groetjes, {PERSON:given}",
           "vraag het aan {PERSON:given_lower}",
           "{PERSON:given_lower} zegt dat het goed is", "Beste {PERSON:full},",
           "polisnummer zorgverzekering: {MEDICAL_ID}", "leerlingnummer {PERSONAL_ID:shaped}"),
    "de": ("Ich heiße {PERSON:full} und wohne in {ADDRESS}.", "Versichertennummer: {MEDICAL_ID}",
           "Personalnummer {PERSONAL_ID:shaped}", "Benutzername: {USERNAME:shaped}",
           "frag mal {PERSON:given_lower}", "Geburtsdatum: {DATE_OF_BIRTH:dots}"),
    "fr": ("Je m'appelle {PERSON:full}, j'habite {ADDRESS}.", "numéro adhérent : {MEDICAL_ID}",
           "matricule : {PERSONAL_ID:shaped}", "identifiant : {USERNAME:shaped}"),
    "es": ("Me llamo {PERSON:full} y vivo en {ADDRESS}.", "número de socio: {PERSONAL_ID}",
           "usuario: {USERNAME:shaped}", "nº de historia clínica {MEDICAL_ID:shaped}"),
    "pl": ("Nazywam się {PERSON:full}, mieszkam przy {ADDRESS}.", "nr legitymacji {PERSONAL_ID}"),
    "ru": ("Меня зовут {PERSON:full}, мой телефон {PHONE}.",
           "табельный номер {PERSONAL_ID:shaped}"),
    "vi": ("Tôi tên là {PERSON:full}, số điện thoại {PHONE}.", "mã bệnh nhân: {MEDICAL_ID:shaped}"),
    "tr": ("Benim adım {PERSON:full}, telefonum {PHONE}.", "sicil no: {PERSONAL_ID:shaped}"),
}
LOCAL_LANGUAGES = tuple(_LOCAL)
_LOCAL_WEIGHTS = {"zh": 4, "ja": 2, "ko": 4, "nl": 4}
_SECRET_LINES = (
    "DATABASE_URL=postgres://{USERNAME:shaped}:{SECRET:password}@db.internal:5432/app",
    "curl 'https://api.example.com/v1/export?api_key={SECRET}&format=csv'",
    "Authorization: Bearer {SECRET}", "STRIPE_SECRET_KEY={SECRET}", "token: {SECRET}",
    "password: {SECRET:password}", "wachtwoord: {SECRET:password}", "Passwort: {SECRET:password}",
    "mot de passe : {SECRET:password}", "contraseña: {SECRET:password}", "密码：{SECRET:password}",
    "비밀번호: {SECRET:password}", "パスワード：{SECRET:password}", "пароль: {SECRET:password}",
    "hasło: {SECRET:password}", "senha: {SECRET:password}", "wifi pw is {SECRET:password}",
    "the new pass is {SECRET:password} dont share", '"client_secret": "{SECRET}"',
    "export GITHUB_TOKEN={SECRET}", "https://hooks.example.com/services/{SECRET}",
    "git clone https://{USERNAME:shaped}:{SECRET}@git.example.com/team/repo.git",
    "aws_secret_access_key = {SECRET}", "?access_token={SECRET}&expires_in=3600",
    "PIN: {SECRET:password}", "my login is {USERNAME:shaped} / {SECRET:password}",
)


def _fill(text: str, rng: random.Random) -> str:
    while "%G%" in text:
        text = text.replace("%G%", rng.choice(_GIVEN), 1)
    while "%U%" in text:
        text = text.replace("%U%", rng.choice(_HANDLE), 1)
    return text


def voice_chat(rng: random.Random) -> str:
    prefix = rng.choice(("%S%: ", "[{_time}] %S%: ", "<%S%> ", "", "%S% > ", "{_time} %S%: "))
    speakers = [rng.choice(_GIVEN + _HANDLE + ("me", "mum", "bro")) for _ in range(2)]
    lines = []
    for _ in range(rng.randint(2, 6)):
        line = rng.choice(CHAT_NEUTRAL) if rng.random() < 0.35 else rng.choice(_CHAT_LINES)
        lines.append(_fill(prefix.replace("%S%", rng.choice(speakers)) + line, rng))
    return "\n".join(lines)


def voice_handles(rng: random.Random) -> str:
    parts = [_fill(rng.choice(_HANDLE_FRAMES), rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.4:
        label = rng.choice(_USER_LABELS)
        parts.append(f"{label}{rng.choice((': ', ' ', '=', '：', ' - '))}"
                     f"{rng.choice(('{USERNAME}', '{USERNAME:shaped}'))}")
    rng.shuffle(parts)
    return rng.choice((" ", "\n", ". ")).join(parts)


def voice_call(rng: random.Random) -> str:
    agent = rng.choice(("AGENT", "Agent", "Operator", "Speaker 1", "A", "{_time} Rep"))
    caller = rng.choice(("CALLER", "Caller", "Customer", "Speaker 2", "B", "{_time} Client"))
    turns = []
    for _ in range(rng.randint(1, 3)):
        question, answer = rng.choice(_SPOKEN)
        filler = rng.choice(("", "", "um ", "yeah so it's ", "let me see... ", "uh, ", "that's "))
        repeat = f" — {answer}" if rng.random() < 0.15 and "{" in answer else ""
        turns.append(f"{agent}: {question}\n{caller}: {filler}{answer}{repeat}")
    if rng.random() < 0.3:
        name = rng.choice(("{PERSON:given_lower}", "mr {PERSON:family}"))
        turns.append(f"{agent}: thank you, {name}")
    return "\n".join(turns)


def local_language(rng: random.Random) -> str:
    weights = [_LOCAL_WEIGHTS.get(language, 1) for language in LOCAL_LANGUAGES]
    return rng.choices(LOCAL_LANGUAGES, weights=weights)[0]


def local_text(rng: random.Random, language: str) -> str:
    lines = [rng.choice(_LOCAL[language]) for _ in range(rng.randint(1, 4))]
    joiner = rng.choice(("\n", " ", "")) if language in ("zh", "ja") else rng.choice(("\n", " "))
    return joiner.join(dict.fromkeys(lines))


def voice_secrets(rng: random.Random) -> str:
    lines = [rng.choice(_SECRET_LINES) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.4:
        lines.insert(0, rng.choice(("# .env for staging", "here are the creds:", "config:",
                                    "as requested,", "Zugangsdaten:", "toegangsgegevens:")))
    return "\n".join(lines)


VOICE_COMPOSERS: dict[str, Callable[[random.Random], str]] = {
    "chat": voice_chat, "handles": voice_handles, "transcript": voice_call,
    "secrets": voice_secrets,
}
