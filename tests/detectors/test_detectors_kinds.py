"""Phones, secrets, national ids, addresses and dates of birth: values found whole, look-alike
numbers of papers left alone; catastrophic rules and missing packages refused at load."""

from __future__ import annotations

import sys

import pytest

from cacheprune.detectors import (
    DetectorChain,
    DetectorConfigError,
    DetectorUnavailableError,
    RuleDetector,
    build_detector,
    load_policy,
)
from cacheprune.detectors.addresses import AddressDetector
from cacheprune.detectors.phones import PhoneDetector
from cacheprune.detectors.policy import default_policy_path
from cacheprune.detectors.secrets import EntropySecretDetector, shannon_entropy

RULES = default_policy_path().parent


def chain_of(*detectors) -> DetectorChain:
    return DetectorChain(list(detectors), timeout_s=None)


def rules(file_name: str) -> RuleDetector:
    return RuleDetector(rules_file=RULES / file_name, name=file_name)


def covers(chain: DetectorChain, text: str, value: str) -> bool:
    at = text.index(value)
    chars = {i for s in chain.run(text).spans for i in range(s.start, s.end)}
    return all(i in chars for i in range(at, at + len(value)))


def masked_chars(chain: DetectorChain, text: str) -> list[str]:
    return [text[s.start:s.end] for s in chain.run(text).spans]


@pytest.mark.parametrize("value", [
    "+44 7700 900123", "0612 345 678", "+49 (0)30 12345678", "06 12 34 56 78",
    "0033 1 42 68 53 00", "(415) 555-0132", "+34 612 34 56 78", "+81 3-1234-5678",
    "0151/23456789", "+7 912 345-67-89", "+55 11 91234-5678", "+44 (0)20 7946 0958",
    "020 7946 0958", "+91 98765 43210", "0049 89 2180 3456", "+46 70 123 45 67",
])
def test_phone_numbers_of_many_countries(value: str) -> None:
    assert covers(chain_of(PhoneDetector()), f"You can call me on {value} tonight.", value)


@pytest.mark.parametrize("text", [
    "Tel: 01342 000000 (replace with the school's number)",
    "Telefon: 089 000000-0, Fax: 020 000 0000",
    "Mündliche Prüfungen: 11-12/6/2026, Raum 4",
])
def test_template_numbers_and_day_ranges_are_no_phones(text: str) -> None:
    assert masked_chars(chain_of(PhoneDetector()), text) == []


def test_a_run_of_digits_ending_in_zeros_is_still_a_number() -> None:
    text = "My account number is 90000000. When does the library close?"
    assert covers(chain_of(PhoneDetector()), text, "90000000")


def test_an_extension_is_part_of_the_number() -> None:
    text = "Call (415) 555-0132 ext. 204 today."
    assert covers(chain_of(PhoneDetector()), text, "(415) 555-0132 ext. 204")


@pytest.mark.parametrize("value", ["jane.doe [at] example [dot] com", "jane(at)example.com",
                                   "jane at example dot org"])
def test_spelled_out_emails(value: str) -> None:
    assert covers(chain_of(rules("default.yaml")), f"Write to {value} please.", value)
    assert masked_chars(chain_of(rules("default.yaml")), "Look at the results at noon.") == []


NUMBERS_OF_PAPERS = (
    "Accuracy rose from 71.4% to 78.9% (n = 1,204) in 2019 with 4096 tokens, 340,000 chars, "
    "version 2.1.0, ISBN 978-3-16-148410-0, doi 10.1145/3292500.3330701, on 2021-03-04, "
    "pages 1123-1135, arXiv:1810.04805, 12.5 ms, Table 12, 100000 steps, garg2012unsupervised, "
    "bert-base-multilingual-cased, roberta-large-mnli, state-of-the-art_results_2019."
)


def test_numbers_and_identifiers_of_papers_stay_public() -> None:
    chain = chain_of(PhoneDetector(), EntropySecretDetector(), rules("identifiers.yaml"),
                     rules("addresses.yaml"), AddressDetector(), rules("secrets.yaml"))
    assert masked_chars(chain, NUMBERS_OF_PAPERS) == []


@pytest.mark.parametrize("value", [
    "sk_live_7pQ2mX9vLw3RtY6bN1cK8dZf", "rk_live_51HxZq2KpL9vBn3Xt7Yw8Rj0aQ",
    "AKIAIOSFODNN7EXAMPLE", "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    "sk-proj-Xq7mB2nR9kL4pV8wT1yZ3cF6hJ0dG5sA", "AIzaSyD3x7Qm9LkPz2Vb8Nc4Wt1Rh6Ys0Ju5Ea",
    "glpat-Ab3dEf6hIj9kLm2nOp5q", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "9f8e7d6c5b4a39281f0e1d2c3b4a5968",
])
def test_provider_keys_and_random_tokens(value: str) -> None:
    chain = chain_of(rules("secrets.yaml"), EntropySecretDetector())
    assert covers(chain, f"Use {value} for the deploy.", value)


@pytest.mark.parametrize(("text", "value"), [
    ("My password is Tr0ub4dor&3 but keep it.", "Tr0ub4dor&3"),
    ("wifi password: BlueHorse!2024", "BlueHorse!2024"),
    ('The db password is "q9#Lm!xZ2$wP"', "q9#Lm!xZ2$wP"),
    ("Mein Passwort ist Sommer2024!", "Sommer2024!"),
    ("mot de passe : Chat-Noir-77", "Chat-Noir-77"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACDx\n"
     "-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACDx"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1vX9k2mQ7d8s0LzQ\nq3Tn4WJZ8dF0",
     "q3Tn4WJZ8dF0"),
])
def test_passwords_and_private_key_blocks(text: str, value: str) -> None:
    assert covers(chain_of(rules("secrets.yaml")), text, value)


@pytest.mark.parametrize(("text", "value"), [
    ("Front door keypad: 2-5-8-0 then the tick button", "2-5-8-0"),
    ("Der Schlüsseltresor hängt neben der Haustür, Code 0-4-7-2.", "0-4-7-2"),
    ("la boîte à clés est dans la cour, code 1130.", "1130"),
    ("el código del portal sigue siendo 2580 seguido de la tecla", "2580"),
    ("Your bank one-time code is 771204. Do not share it.", "771204"),
    ("G-482913 is your verification code.", "482913"),
    ("Ο κωδικός του συναγερμού είναι 7305 και το κλειδί", "7305"),
    ("Настя: код домофона 2741", "2741"),
    ("Mã két sắt ở quầy là 0 5 2 8, anh nhớ khoá lại", "0 5 2 8"),
    ("现在门禁密码是 *4729#，周五之前都有效", "*4729#"),
])
def test_door_codes_pins_and_one_time_codes(text: str, value: str) -> None:
    assert covers(chain_of(rules("secrets.yaml")), text, value)


@pytest.mark.parametrize("text", [
    "HTTP status code 404 returned", "exit code 137 after the OOM kill",
    "código postal 28013 Madrid", "Use promo code 2024 at checkout", "area code 212",
    "Our Code of Conduct 2024 edition", "the code was released in 2024",
    "Código de rastreio: QB 553 281 044 BR", "código de error 5001",
    "बैंक कभी भी आपका OTP नहीं मांगता। शिकायत 1930 पर करें।",
    "[WARN] 店舗コード 0187 の売上データが未着",
    "ERROR facturador - No se pudo obtener CAE: código 10016 rechazado",
    "Codice esito: 00404 — File duplicato",
])
def test_numbers_near_public_codes_stay_public(text: str) -> None:
    assert not any(c.isdigit() for c in "".join(masked_chars(chain_of(rules("secrets.yaml")),
                                                             text)))


@pytest.mark.parametrize(("text", "accounts"), [
    ("user CONTOSO\\wbanks locked out", ["CONTOSO\\wbanks"]),
    ('"account": "HOSPLUZ\\\\jmsilva"', ["HOSPLUZ\\\\jmsilva"]),
    ("runs as NT AUTHORITY\\SYSTEM", []),
    ("granted to BUILTIN\\Administrators", []),
    ("key HKLM\\SOFTWARE\\Microsoft", []),
    ("log folder CORP\\svc-backup\\logs", []),
])
def test_windows_domain_accounts(text: str, accounts: list[str]) -> None:
    assert masked_chars(chain_of(rules("fields.yaml")), text) == accounts


@pytest.mark.parametrize(("text", "handles"), [
    ("Sistem kullanıcı adı: gkaraca", ["gkaraca"]),
    ("    Merge pull request #2291 from wzielinski/fix-retry", ["wzielinski"]),
    ("e81b07d Merge pull request #2291 from release/v5.3", []),
    ("    # TODO(mkhumalo): handle the empty batch", ["mkhumalo"]),
    ("# TODO(#123) later; FIXME(security): escape it; TODO(perf), NOTE(i18n)", []),
    ("Channel: twitch.tv/cozycrumpet (partner)", ["cozycrumpet"]),
    ("see github.com/pytorch/pytorch for the code", []),
])
def test_handles_of_code_hosts_and_streams(text: str, handles: list[str]) -> None:
    assert masked_chars(chain_of(rules("fields.yaml")), text) == handles


@pytest.mark.parametrize(("text", "names"), [
    ("при секретаре Шишкиной Д. А., рассмотрев", ["Шишкиной Д. А."]),
    ("на ученицу Мельничук Н.О. 9-Б класса", ["Мельничук Н.О."]),
    ("Подписал: Т. П. Смирнова", ["Т. П. Смирнова"]),
    ("г. Москва, ул. Ленина, д. 5, стр. 2", []),
    ("see Smith J. A. (2019), p. 4", []),
])
def test_cyrillic_names_with_initials(text: str, names: list[str]) -> None:
    spans = chain_of(rules("fields.yaml")).run(text).spans
    assert [text[s.start:s.end] for s in spans if s.entity == "PERSON"] == names


def test_shannon_entropy_against_its_definition() -> None:
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == 2.0
    assert shannon_entropy("aabb") == 1.0


@pytest.mark.parametrize(("text", "value"), [
    ("My SSN is 536-90-4187.", "536-90-4187"),
    ("DNI: 12345678Z, for the lease.", "12345678Z"),
    ("NIE X1234567L", "X1234567L"),
    ("Codice fiscale RSSMRA85T10A562S", "RSSMRA85T10A562S"),
    ("BSN 111222333 staat erop.", "111222333"),
    ("Passport number C01X00T47, issued in Munich.", "C01X00T47"),
    ("My UK passport no. is 533380006.", "533380006"),
    ("NHS number 943 476 5919", "943 476 5919"),
    ("Aadhaar: 2345 6789 0124", "2345 6789 0124"),
    ("Steuer-ID 86095742719", "86095742719"),
    ("CPF 529.982.247-25", "529.982.247-25"),
    ("SIN: 130 692 544", "130 692 544"),
    ("ID 11010519491231002X", "11010519491231002X"),
    ("National Insurance number QQ 12 34 56 C", "QQ 12 34 56 C"),
    ("NINO: AB123456C", "AB123456C"),
])
def test_national_ids_and_passports(text: str, value: str) -> None:
    chain = chain_of(rules("default.yaml"), rules("identifiers.yaml"))
    assert covers(chain, text, value)


def test_checked_ids_need_a_valid_check_digit_or_a_label() -> None:
    chain = chain_of(rules("identifiers.yaml"))
    # Right shapes, wrong check digits, no label: ordinary codes.
    assert masked_chars(chain, "Codes RSSMRA85T10A562T and 12345678A and 529.982.247-26.") == []


@pytest.mark.parametrize("value", [
    "221B Baker Street, London NW1 6XE", "1600 Pennsylvania Ave NW, Washington, DC 20500",
    "Flat 3, 47 Kingsley Road, Manchester M14 5PL", "350 Fifth Avenue, Apt 12C, New York, NY 10118",
    "Musterstraße 12, 10115 Berlin", "Hauptstraße 45a, 80331 München",
    "12 rue de la Paix, 75002 Paris", "8 avenue des Champs-Élysées, 75008 Paris",
    "Calle Mayor 5, 3º B, 28013 Madrid", "Piso 2, Avenida de la Constitución 18, 41004 Sevilla",
    "Via Roma 10, 00184 Roma", "Corso Buenos Aires 33, 20124 Milano",
    "Keizersgracht 123, 1015 CJ Amsterdam", "Prinsengracht 263, 1016 GV Amsterdam",
    "1-2-3 Shibuya, Shibuya-ku, Tokyo 150-0002", "〒100-0001 東京都千代田区千代田1-1",
    "Unter den Linden 77, 10117 Berlin", "Damrak 1, 1012 LG Amsterdam", "500 W 2nd St, Austin, "
    "TX 78701", "C/ Alcalá 45, 2º izq., 28014 Madrid", "PO Box 4521, Anchorage, AK 99509",
    "Flat 12B, Riverside House, 45 Thames Street, London SE1 9RT", "大阪府大阪市北区梅田3-1-1",
    "0487 Hopkins Squares Apt. 891\nNew Stephen, NV 72040", "ul. Kwiatowa 12/4\n00-950 Warszawa",
    "Hans-Günter-Ring 5/3\n12345 Stadtfeld", "Rua Augusta, 1500 - Consolação, São Paulo - SP, "
    "01304-001", "Flat 4\n22 Kingsway\nLondon\nWC2B 6LE", "PO Box 48217-00100, Nairobi",
    "Calle del Pez 7, 1ºA\n28004 Madrid", "ул. Лесная, д. 5, кв. 12, Казань, 420012",
    "北京市朝阳区建国路88号2号楼1203室", "부산광역시 해운대구 센텀중앙로 97, 15층 1502호",
    "Hämeenkatu 12 A 5, 33100 Tampere", "Vesterbrogade 71, 2. th., 1620 København V",
    "Váci út 18, 1132 Budapest", "Bd. Unirii nr. 15, bl. 3, ap. 21, 030833 București",
])
def test_addresses_of_many_countries_are_covered_whole(value: str) -> None:
    chain = chain_of(rules("addresses.yaml"), AddressDetector())
    assert covers(chain, f"Please send it to {value}, thanks.", value)


@pytest.mark.parametrize("text", [
    "Building 3 is closed for renovation until May.", "See Box 3 and Table 4 Main Results.",
    "In Spring 2021, 4000 samples were drawn via Gibbs 10 times (Smith et al. Nature 2017).",
])
def test_numbers_near_capitalized_words_are_no_address(text: str) -> None:
    assert masked_chars(chain_of(rules("addresses.yaml"), AddressDetector()), text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("I was born on 14/03/1987.", "14/03/1987"),
    ("Date of birth: 03/04/85", "03/04/85"),
    ("d.o.b. 29/02/92", "29/02/92"),
    ("DOB 1990-07-21", "1990-07-21"),
    ("Born 12 Aug 1975.", "12 Aug 1975"),
    ("Geburtsdatum: 04.11.1962", "04.11.1962"),
    ("Né le 3 mars 1971 à Lyon.", "3 mars 1971"),
    ("私の誕生日覚えてる？\n平成8年4月17日でしょ", "平成8年4月17日"),
    ("내 생일 96년 11월 28일인거 까먹지마라", "96년 11월 28일"),
    ("sinh nhật em 14 tháng 3 đúng ko", "14 tháng 3"),
    ("วันเกิด: 5 มีนาคม 2484", "5 มีนาคม 2484"),
    ("تاریخ تولد: ۲۳ مهر ۱۳۹۸", "۲۳ مهر ۱۳۹۸"),
    ("ولد في 12 آذار 1942 في حلب", "12 آذار 1942"),
    ("Bibi alizaliwa 4 Aprili 1947 Moshi", "4 Aprili 1947"),
    ("生年月日：昭和十二年四月三日", "昭和十二年四月三日"),
])
def test_dates_of_birth_with_two_and_four_digit_years(text: str, value: str) -> None:
    assert covers(chain_of(rules("default.yaml")), text, value)


@pytest.mark.parametrize("text", ["Ratios of 3/4/85 were seen.", "令和6年4月1日施行の規則",
                                  "Hà Nội, ngày 14 tháng 3 năm 2025", "회의는 26년 3월 4일",
                                  "発生日時：2025年3月8日 14:05〜14:47",
                                  "สอบปลายภาค 13 มีนาคม 2569", "اجتماع 12 آذار 2026"])
def test_two_digit_year_and_era_dates_need_a_birth_word(text: str) -> None:
    assert masked_chars(chain_of(rules("default.yaml")), text) == []


@pytest.mark.parametrize("pattern", [r"(b|bb)+c", r"(?:x|xx)+y", r"(a|a)+b", r"(?:1|11|111)+2",
                                     r"(?:\.|\.\.)+!x", r"(?:foo|foofoo)+bar"])
def test_the_overlapping_alternation_family_is_refused_at_load(pattern: str) -> None:
    spec = {"rules": [{"name": "slow", "entity": "X", "patterns": [{"regex": pattern,
                                                                     "score": 1.0}]}]}
    with pytest.raises(DetectorConfigError, match=r"rules\[0\] \('slow'\).*catastrophically"):
        RuleDetector(spec=spec)


def test_a_policy_naming_a_detector_whose_package_is_missing_says_what_to_install(
    tmp_path, monkeypatch
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ndetectors:\n  - detector: phones\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "phonenumbers", None)  # a missing package, on purpose
    with pytest.raises(DetectorUnavailableError, match=r"policy.yaml: detectors\[0\] "
                       r"\('phones'\).*pip install 'phonenumbers"):
        load_policy(policy)
    # A built-in whose own module cannot be imported: the error names it, never a bare import
    # error from deep inside.
    monkeypatch.setitem(sys.modules, "cacheprune.detectors.secrets", None)
    with pytest.raises(DetectorUnavailableError, match="detector 'secrets' needs"):
        build_detector("secrets")


@pytest.mark.parametrize(("text", "names"), [
    ("booking ref 4QZ7 passenger NAKAMURA/HARUKI seat 14C", ["NAKAMURA/HARUKI"]),
    ("PAX: OKAFOR/CHIDI EMEKA MR  seat 3A", ["OKAFOR/CHIDI EMEKA MR"]),
    ("see the TCP/IP and CI/CD docs", []),
])
def test_names_in_airline_order(text: str, names: list[str]) -> None:
    spans = chain_of(rules("fields.yaml")).run(text).spans
    assert [text[s.start:s.end] for s in spans if s.entity == "PERSON"] == names
