"""Chat logs: the nickname that starts each line is a username; records, logs and roles are not."""

from __future__ import annotations

import pytest

from cacheprune.detectors.chat_speakers import ChatSpeakerDetector


@pytest.fixture(scope="module")
def speakers() -> ChatSpeakerDetector:
    return ChatSpeakerDetector()


def found(detector: ChatSpeakerDetector, text: str) -> list[str]:
    return sorted({text[s.start:s.end] for s in detector.detect(text)})


@pytest.mark.parametrize(("text", "expected"), [
    ("[09:02] <amber_k> morning all, is staging down?\n[09:03] <tjm> yep, 502s since 8:40\n"
     "[09:04] <amber_k> ok, calling hope", ["amber_k", "tjm"]),
    ("[03.03.26, 18:47] Mama: Bist du Samstag zum Essen da?\n"
     "[03.03.26, 18:52] Lukas: ja, bring Ewa mit\n[03.03.26, 18:53] Mama: Natürlich!\n"
     "[03.03.26, 19:10] Lukas: Adresse fürs Navi nochmal?", ["Lukas"]),  # 'Mama' is a role
    ("[10:41] Gonzalo: che, alguien tiene el CBU?\n[10:43] meli: te lo paso ahora\n"
     "[10:43] meli: o el alias que es más fácil", ["Gonzalo", "meli"]),
    ("ShadowMonarch_ — Today at 8:41 PM\nneed 2 for ranked\nohnoitsjess — Today at 8:43 PM\n"
     "@ShadowMonarch_ play with us", ["ShadowMonarch_", "ohnoitsjess"]),
    # display names with emoji, and messages in scripts without spaces
    ("みお🍙: 〒564-0062 大阪府吹田市垂水町2-31-5\nけんた_k: ありがと！何時ごろ行けばいい？\n"
     "みお🍙: 10時くらいで\nけんた_k: 了解、また連絡するね", ["けんた_k", "みお🍙"]),
    # nicknames in scripts without letter case
    ("राहुल: कल मीटिंग कितने बजे है?\nअमित: दस बजे, ऑफिस में\nराहुल: ठीक है, मैं आ जाऊँगा\n"
     "अमित: ओके, मिलते हैं", ["अमित", "राहुल"]),
])
def test_the_nicknames_that_start_a_chats_lines_are_usernames(speakers, text, expected) -> None:
    assert found(speakers, text) == expected


@pytest.mark.parametrize("text", [
    # a record's keys, one each
    "nom : Nguyen-Rousseau\nprénom : Théophile\nadresse : 8 impasse du Lavoir\ntél : 07 81 55",
    # an LDIF export: keys repeat, values are one word
    "dn: uid=svc-backup,ou=Services\nobjectClass: account\nobjectClass: simpleSecurityObject\n"
    "uid: svc-backup\ndn: cn=readonly,ou=Services\nobjectClass: organizationalRole",
    # indented YAML records
    "- admission_no: '004187'\n  legal_name: Ruby Whitcombe\n  dob: 2010-12-01\n"
    "- admission_no: '004203'\n  legal_name: Shay Porter\n  dob: 2011-02-19",
    # a log's components after a stamp with seconds
    "[2024-02-14 08:00:00] cron: uruchomiono eksport faktur\n"
    "[2024-02-14 08:00:03] eksport: znaleziono 1 284 dokumenty\n"
    "[2024-02-14 08:02:18] cron: zakończono, kod wyjścia 0",
    # roles, not accounts
    "cliente: salve, ho ordinato il divano\noperatore: Buongiorno! Verifico subito\n"
    "cliente: ok ma quando arriva??\noperatore: La consegna è prevista domani",
    "एजेंट: नमस्ते, मैं आपकी क्या मदद कर सकता हूँ?\nग्राहक: मेरा ऑर्डर नहीं आया\n"
    "एजेंट: कृपया ऑर्डर नंबर बताइए\nग्राहक: अभी भेजता हूँ",
    "손님: 예약 확인 부탁드려요 오늘 저녁\n직원: 네 성함 말씀해 주세요 손님\n"
    "손님: 내일 다시 올게요 감사합니다\n직원: 네 감사합니다 안녕히 가세요",
    # network services and hosts
    "<ChanServ> Channel #offtopic is registered\n<ChanServ> Please read the rules\n",
    "web-03.stg.example.internal : ok=7 changed=2 failed=0\n"
    "web-04.stg.example.internal : ok=7 changed=2 failed=0",
    # one line is no conversation
    "mike: ok see you there",
])
def test_records_logs_roles_and_services_are_no_speakers(speakers, text: str) -> None:
    assert found(speakers, text) == []
