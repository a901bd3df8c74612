"""Forms the blind corpus part showed missing, each as a family: labelled fields, tables, names in
capitals and other scripts, ids with a check digit, provider keys, dates and contacts in more
formats. Each family also has prose that must stay public."""

from __future__ import annotations

import pytest
from detectors_faults import FindsOnly

from cacheprune.detectors import DetectorChain, RuleDetector
from cacheprune.detectors.addresses import AddressDetector
from cacheprune.detectors.names import NameDetector
from cacheprune.detectors.normalize import normalize_for_detection
from cacheprune.detectors.phones import PhoneDetector
from cacheprune.detectors.policy import default_policy_path
from cacheprune.detectors.secrets import EntropySecretDetector
from cacheprune.detectors.tables import TableColumnDetector

RULES = default_policy_path().parent


def rules(file_name: str) -> RuleDetector:
    return RuleDetector(rules_file=RULES / file_name, name=file_name)


@pytest.fixture(scope="module")
def names() -> NameDetector:
    return NameDetector()


def masked(detector, text: str) -> list[str]:
    """What a chain of this one detector masks, in the original text (normalized for it)."""
    chain = DetectorChain([detector], timeout_s=None)
    return sorted({text[s.start:s.end] for s in chain.run(text).spans})


def covers(detector, text: str, value: str) -> bool:
    chain = DetectorChain([detector], timeout_s=None)
    chars = {i for s in chain.run(text).spans for i in range(s.start, s.end)}
    at = text.index(value)
    return all(i in chars for i in range(at, at + len(value)))


@pytest.mark.parametrize(("text", "value"), [
    ("username: r_okafor88 (not the e-mail)", "r_okafor88"),
    ("Mein Benutzername ist hkoenig, danke.", "hkoenig"),
    ("log line: user=svc_backup host=db1", "svc_backup"),
    ("add me on Steam: Lone_W0lf", "Lone_W0lf"),
    ("DM me on insta @tanvi.draws", "@tanvi.draws"),
    ("my tag is kestrel#0291", "kestrel#0291"),
    ("code at https://gitlab.com/mvoigt-dev", "mvoigt-dev"),
    ("The licence plate is BD51 SMR.", "BD51 SMR"),
    ("bilen har registreringsskylt NRT 58F sedan i fjol", "NRT 58F"),
    ("Kennzeichen: HH-LK 4821", "HH-LK 4821"),
    ("la targa è AB 123 CD.", "AB 123 CD"),
    ("MRN: 8841-2207 admitted", "8841-2207"),
    ("member ID ZKH310274485, group 55", "ZKH310274485"),
    ("Versichertennummer ist T123456784.", "T123456784"),
    ("claim for member QWX 773104829, dated May", "QWX 773104829"),
    ("Name: Kwabena Mensah-Bonsu\nRole: engineer", "Kwabena Mensah-Bonsu"),
    ('{"full_name": "Ilse Vanderhaegen", "age": 41}', "Ilse Vanderhaegen"),
    ("Titular ROSÂNGELA MACEDO PINTO", "ROSÂNGELA MACEDO PINTO"),
    ("card 5500 0000 0000 0004, CVC 318", "318"),
    ("seed phrase below, keep it safe: ladder velvet orbit canyon museum pepper guitar "
     "shrimp tornado silent harvest mango", "ladder velvet orbit canyon museum pepper guitar "
     "shrimp tornado silent harvest mango"),
    ("the printer is 4c:ed:fb:10:22:9a on the LAN", "4c:ed:fb:10:22:9a"),
    ("Cisco shows 0c1a.2b3c.d4e5 as the port's device", "0c1a.2b3c.d4e5"),
    ("pay via UPI to meera.k21@oksbi please", "meera.k21@oksbi"),
    ('10.1.4.22 - d.okonkwo [02/Feb/2025:08:14:03 +0000] "POST /login HTTP/1.1" 302 0',
     "d.okonkwo"),
    ("Employee ID: E-20417.", "E-20417"),
    ('{"customer_id":"CUS-448120","amount":1499}', "CUS-448120"),
    ("Serial: PF3KX92T\nIssue: backlight", "PF3KX92T"),
    ("Booking ref X8KLQ2. Check in online.", "X8KLQ2"),
    ("Matrikelnummer 304215/2023 bitte angeben", "304215/2023"),
    ("学籍番号：2023A0417", "2023A0417"),
    ("IMEI 35-209900-176148-1 reported stolen", "35-209900-176148-1"),
])
def test_labelled_fields_and_their_shapes(text: str, value: str) -> None:
    assert covers(rules("fields.yaml"), text, value)


@pytest.mark.parametrize("text", [
    "The user is asked to rate each reply; the login page and Twitter dataset follow.",
    "User: Hello there\nAssistant: Hi! How can I help?",
    "The plate was incubated for 24 hours and the policy 3000 steps later converged.",
    "Patient: The patient presented with fever. Name: the same as above.",
    "Results on Reddit BIBREF12 and Twitter BIBREF3; see @inproceedings{smith2020}.",
    "We mark it @resume in the lexicon; Precision@10 and Hits@K are reported.",
    '10.1.4.22 - - [02/Feb/2025:08:14:03 +0000] "GET /health HTTP/1.1" 200 2',
    "Order number 48213 shipped; Ticket #48213 closed; membership lapsed in 2019.",
    "Student ID: XXXX-XXXX (your card shows it under the photo)",
])
def test_labelled_fields_leave_prose_alone(text: str) -> None:
    assert masked(rules("fields.yaml"), text) == []


def test_table_cells_under_private_columns() -> None:
    text = ("id;full name;e-mail;plan\n17;Berit Ødegård;berit@example.no;basic\n"
            "18;Tomasz Zieliński;tz@example.pl;pro\n\nTotal: 2 customers")
    assert masked(TableColumnDetector(), text) == sorted(
        ["Berit Ødegård", "berit@example.no", "Tomasz Zieliński", "tz@example.pl"])
    markdown = "| Owner | MAC |\n|---|---|\n| jdoe | 00:11:22:33:44:55 |"
    assert masked(TableColumnDetector(), markdown) == ["00:11:22:33:44:55", "jdoe"]
    staff = "checkin_time,member_no,name,club\n2024-11-04 06:02,FIT-400182,Obinna Chukwu,Soho"
    assert masked(TableColumnDetector(), staff) == ["FIT-400182", "Obinna Chukwu"]


@pytest.mark.parametrize("text", [
    "Name, email and phone are required fields.\nWe asked, and they said yes.",
    "file name,size,owner group\nreport.pdf,12 KB,staff",
    "model,accuracy,f1\nbert,0.91,0.88",
])
def test_tables_without_private_columns_stay_public(text: str) -> None:
    assert masked(TableColumnDetector(), text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("BENEFICIARY: OLUWASEUN ADEBAYO-COLE", ["OLUWASEUN ADEBAYO-COLE"]),
    ("Contact WANG Fang or DUBOIS Camille.", ["DUBOIS Camille", "WANG Fang"]),
    ("Best regards,\nK. Vasquez-Thornbury", ["K. Vasquez-Thornbury"]),
    ("Please invite Mark Hughes and Summer Rose.", ["Mark Hughes", "Summer Rose"]),
    ("こんにちは、高橋 健太です。", ["高橋 健太"]),
    ("담당자는 박서준님입니다.", ["박서준"]),
    ("hi, i'm lena k. moreau from accounts", ["lena k. moreau"]),
    ("Hello po, I'm Ma. Teresa Dela Paz.", ["Ma. Teresa Dela Paz"]),
])
def test_names_in_capitals_initials_lists_and_other_scripts(names, text, expected) -> None:
    found = sorted({text[s.start:s.end] for s in names.detect(text)})
    assert [f for f in found if any(f in e for e in expected)] == sorted(expected)


@pytest.mark.parametrize("text", [
    "We met at Victoria Station near Stanford University.",
    "Professor E: OK . Grad C: So .",
    "CUT TO JACOB'S KITCHEN. TABLE II: BLEU AND ROUGE.",
])
def test_places_speaker_labels_and_headings_are_no_names(names, text: str) -> None:
    assert names.detect(text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("personnummer 790623-4179.", "790623-4179"),
    ("RRN 851102-1073157", "851102-1073157"),
    ("PPSN 3918274RA", "3918274RA"),
    ("FIN T0318274B", "T0318274B"),
    ("dowód KMB730715", "KMB730715"),
    ("身份证 440305199008122311", "440305199008122311"),
    ("マイナンバーは7301 5829 4603です", "7301 5829 4603"),
    ("pan number: abcpk1234z", "abcpk1234z"),
    ("Reisepassnummer: C4J7R2P91", "C4J7R2P91"),
    ("HKID Z384716(1) on file", "Z384716(1)"),
    ("身分證 R229384715", "R229384715"),
    ("rodné číslo 905421/3817", "905421/3817"),
    ("CNP 1960305418273.", "1960305418273"),
])
def test_ids_with_check_digits_and_labels(text: str, value: str) -> None:
    assert covers(rules("identifiers.yaml"), text, value)


def test_ids_with_a_wrong_check_digit_or_a_short_value_stay_public() -> None:
    text = "Codes 790623-4178, 851102-1073158, T0318274C, KMB830715; RFC 7231 and ISO 8601."
    assert masked(rules("identifiers.yaml"), text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("bot token 123456789:AAH3kFq9vL2mN8pR5sT1uW4xY7zB0cD6eGj",
     "123456789:AAH3kFq9vL2mN8pR5sT1uW4xY7zB0cD6eGj"),
    ("export DB_PASSWORD=Tq7!mZ2#pR", "Tq7!mZ2#pR"),
    ("Set-Cookie: session_id=a8f3k2m9q7z1x4c6v0b5n2m8; Path=/", "a8f3k2m9q7z1x4c6v0b5n2m8"),
    ("Passwort für das WLAN ist Kiefer#2291", "Kiefer#2291"),
    ("JWT eyJhbGciOiJIUzI1NiJ9.c29tZSBwYXlsb2FkIGhlcmU.Qm9ndXNTaWduYXR1cmUxMjM0NQ",
     "eyJhbGciOiJIUzI1NiJ9.c29tZSBwYXlsb2FkIGhlcmU.Qm9ndXNTaWduYXR1cmUxMjM0NQ"),
    ("GROQ_KEY=gsk_" + "Ab3" * 17, "gsk_" + "Ab3" * 17),
    ("the password I picked was Fjord_Lantern7 yesterday", "Fjord_Lantern7"),
])
def test_secrets_of_more_providers_and_config_keys(text: str, value: str) -> None:
    assert covers(rules("secrets.yaml"), text, value)


def test_named_digests_and_config_numbers_stay_public() -> None:
    text = ("Fixed in commit 1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e; sha256: "
            "0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b5a6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c; max_tokens=4096.")
    assert masked(EntropySecretDetector(), text) == []
    assert masked(rules("secrets.yaml"), text) == []


@pytest.mark.parametrize("text", [
    '"integrity": "sha512-9cUznXMG0+FxRuJfvL82QlTqIzhVW9sL0KjMPHhAOOvpQGL8QtdxnBKILjBqxlHyliz0y'
    'Ca1G903ZXI/FuHy2w==",',
    "github.com/cespare/xxhash/v2 v2.2.0 h1:DC2CZ1Ep5Y4k3ZQ899DldepgrayRUGE6BBZ/cd9Cj44=",
    "upload ok size=18.4GiB sha256="
    "9c1e0f7d2ab84c55e6a3f1d07b9e2c44a18f6d33b0e5c7a9d2f4e8b1c6a3d5f0",
    "libquiver-3.1.0.tar.gz  e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Trace ID       : 4bf92f3577b34da6a3ce929d0e0e4736",
    "HEAD is now at 8d4f1c2a9b7e6f305c1d2e4a8b9c0f7e6d5a4b3c Merge pull request #512",
    "pod = thumbnailer-5b8d7c9f4-2vrtq, severity = critical",
    "created orderNo=DD20250312102133001847, traceId=a3f9c1d27e8b4f60",
    "256 SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8 deploy@build-01 (ED25519)",
])
def test_digests_of_packages_traces_and_generated_names_stay_public(text: str) -> None:
    assert masked(EntropySecretDetector(), text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("api_key=sk9Xq2LmP4vR7tY1wZ3nB6cD8fG0hJ5k", "sk9Xq2LmP4vR7tY1wZ3nB6cD8fG0hJ5k"),
    ("token: 9c1e0f7d2ab84c55e6a3f1d07b9e2c44a18f6d33b0e5c7a9d2f4e8b1c6a3d5f0",
     "9c1e0f7d2ab84c55e6a3f1d07b9e2c44a18f6d33b0e5c7a9d2f4e8b1c6a3d5f0"),
    ("session=Qm8xR2tLcDZ3WjVnN1ZhYjNmUzRkSA2x9 expires", "Qm8xR2tLcDZ3WjVnN1ZhYjNmUzRkSA2x9"),
])
def test_a_keys_value_is_the_secret_not_its_name(text: str, value: str) -> None:
    assert masked(EntropySecretDetector(), text) == [value]


@pytest.mark.parametrize(("text", "value"), [
    ("生年月日：1988年2月29日", "1988年2月29日"),
    ("Data urodzenia: 7 września 1979", "7 września 1979"),
    ('"birth_date": "1993-05-02T00:00:00Z"', "1993-05-02T00:00:00Z"),
    ("born Jan. 3rd '71 in Leeds", "Jan. 3rd '71"),
    ("write to maría.pérez@correo.example.es", "maría.pérez@correo.example.es"),
    ('send it to "ops team"@example.net', '"ops team"@example.net'),
    ("mail me: li dot wei at example dot org", "li dot wei at example dot org"),
])
def test_dates_of_birth_and_emails_in_more_forms(text: str, value: str) -> None:
    assert covers(rules("default.yaml"), text, value)


def test_timestamps_and_dot_products_stay_public() -> None:
    text = "Logged 2024-05-01T10:22:03Z; look at the dot product at each dot com."
    assert masked(rules("default.yaml"), text) == []


@pytest.mark.parametrize(("text", "values"), [
    ("Call 1-877-FIX-ROOF today", ["1-877-FIX-ROOF"]),
    ("Büro 089 / 4418 2937", ["089 / 4418 2937"]),
    ("Tel: +44 20 7946 0152 / +33 1 44 55 66 77", ["+44 20 7946 0152", "+33 1 44 55 66 77"]),
    ("電話番号は03-5412-8830です", ["03-5412-8830"]),
])
def test_vanity_numbers_slashes_and_numbers_against_japanese_text(text, values) -> None:
    assert masked(PhoneDetector(), text) == sorted(values)


def test_a_space_at_a_script_change_maps_to_no_original_character() -> None:
    text = "電話番号は090-1234-5678です"
    view = normalize_for_detection(text)
    assert view.text == "電話番号は 090-1234-5678 です"
    at = view.text.index("090")
    assert view.original_span(at - 1, at + 13) == (5, 18)  # the space adds nothing
    assert text[slice(*view.original_span(at, at + 13))] == "090-1234-5678"


@pytest.mark.parametrize(("text", "value"), [
    ("[reminder: tomasz nowak says the key changed]", "tomasz nowak"),
    ("fyi paolo rossi wrote the summary", "paolo rossi"),
    ("[fyi: giulia zanforlin says the room moved]", "giulia zanforlin"),
    ("ok, ingrid van der linden here. first some context.", "ingrid van der linden"),
    ("hi, pieter de wolff-ravensbergen here. quick question", "pieter de wolff-ravensbergen"),
    ("and herr schmidt sagt, das passt", "herr schmidt"),
    ("pani ewa kowalska dzwoniła wczoraj", "pani ewa kowalska"),
])
def test_lower_case_names_with_a_cue_after_or_a_title_before(names, text, value) -> None:
    assert covers(names, text, value)


@pytest.mark.parametrize(("text", "value"), [
    ("please ask Prof. Dott.ssa Chiara Gallo first", "Prof. Dott.ssa Chiara Gallo"),
    ("the form was signed by pan Marek Zieliński today", "pan Marek Zieliński"),
    ("Hello, I am Ing. Pieter Bakker.", "Ing. Pieter Bakker"),
    ("Sayın Ayşe Kaya, hoş geldiniz", "Sayın Ayşe Kaya"),
])
def test_a_title_and_its_period_belong_to_the_name(names, text, value) -> None:
    assert covers(names, text, value)


def test_lower_case_words_that_are_also_names_stay_public(names) -> None:
    prose = ("mark said the model will grant access. the young rose says nothing, and "
             "the fair grant wrote back. bill said it was late. will here is a verb. "
             "the pan was hot; the state said so. anna probably said yes.")
    assert masked(names, prose) == []


@pytest.mark.parametrize(("text", "value"), [
    ("post it to 14, boulevard des capucines, 13001 marseille thanks",
     "14, boulevard des capucines, 13001 marseille"),
    ("calle de alcalá 42, 28014 madrid", "calle de alcalá 42, 28014 madrid"),
    ("We moved to Molenboulevard 8, 6511AB, Nijmegen in May.",
     "Molenboulevard 8, 6511AB, Nijmegen"),
    ("Bezoekadres: Stationsbaan 120, 4811 BK Breda", "Stationsbaan 120, 4811 BK Breda"),
])
def test_lower_case_streets_and_dutch_compounds(text: str, value: str) -> None:
    assert covers(AddressDetector(), text, value)


def test_numbers_before_street_words_in_prose_stay_public() -> None:
    prose = ("We laid 5 place settings, compared 2 route options and 3 cours magistraux; "
             "in 2019 the rue de la paix was closed, as 12 avenue trees fell in 2020.")
    assert masked(AddressDetector(), prose) == []


@pytest.mark.parametrize(("text", "value"), [
    ("【交管12123】您名下号牌为沪C·7H3M9的车辆", "沪C·7H3M9"),
    ("吴建国,3-1-702,苏E·7Q2L8,139 1542 6083", "苏E·7Q2L8"),
    ("Parkberechtigung Tiefgarage: ja, für P-AS 1205", "P-AS 1205"),
    ("Ein zweites Fahrzeug (UN-Z 77) stand dort", "UN-Z 77"),
    ("το όχημά σας με αριθμό κυκλοφορίας ΙΚΡ-6027 σταθμεύτηκε", "ΙΚΡ-6027"),
    ("Otopark: Kiracıya ait 1 araç (06 BFR 735)", "06 BFR 735"),
    ("ทะเบียนรถ: กข 3058 ปทุมธานี\nโทร", "กข 3058 ปทุมธานี"),
    ("Az autó rendszám: RKL-519, kérem", "RKL-519"),
])
def test_plates_of_one_countrys_shape_and_labels_of_more_languages(text: str, value: str) -> None:
    assert value in masked(rules("fields.yaml"), text)


@pytest.mark.parametrize("text", [
    "certified to ISO-IEC 27001 and DIN-EN 1090 since 2019",
    "set the locale to EN-GB 2019 style", "on 15 MAR 2025 the office closes",
])
def test_norms_locales_and_dates_are_no_plates(text: str) -> None:
    assert masked(rules("fields.yaml"), text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("Le digicode c'est 4817B, et après il faut sonner.", "4817B"),
    ("porten går inte i lås. Portkoden 4471 fungerar.", "4471"),
    ("공동현관 비번 #1592 누르시면 돼요", "#1592"),
])
def test_door_codes_with_a_letter_and_in_more_languages(text: str, value: str) -> None:
    assert value in masked(rules("secrets.yaml"), text)


def test_an_address_split_over_columns_beside_a_persons_name() -> None:
    text = ("holder_name,house_no,street,postcode,vrm\n"
            "Gethin Pryce-Lloyd,221,Whitchurch Rd,CF14 3NB,WN68 OPL\n")
    assert masked(TableColumnDetector(), text) == sorted(
        ["Gethin Pryce-Lloyd", "221", "Whitchurch Rd", "CF14 3NB", "WN68 OPL"])
    # a bare 'name' may name a station: its postcode stays public
    stations = "code,name,street,postcode\nCHX,Charing Cross,Strand,WC2N 5HR\n"
    assert "WC2N 5HR" not in masked(TableColumnDetector(), stations)


@pytest.mark.parametrize(("text", "values"), [
    ('{"cliente": {"nome": "Inês Monteiro", "morada": {"rua": "Rua de Cedofeita", '
     '"numero": "412", "andar": "3.º Esq.", "codigo_postal": "4050-174", "localidade": "Porto"}}}',
     ["Rua de Cedofeita", "412", "3.º Esq.", "4050-174", "Porto"]),
    ('{\n  "policyholder": {\n    "first_name": "Olusegun",\n    "address": {\n'
     '      "line1": "Flat 9, Kestrel House",\n      "city": "London",\n'
     '      "postcode": "SE10 8JL",\n      "country": "GB"\n    }\n  }\n}',
     ["Flat 9, Kestrel House", "London", "SE10 8JL"]),
    ("customer:\n  first_name: Ana\n  address:\n    street: 1 Main St\n    city: Springfield\n"
     '    zip: "12345"\n', ["1 Main St", "Springfield", "12345"]),
])
def test_an_address_split_over_the_keys_of_a_persons_record(text: str, values: list[str]) -> None:
    found = masked(TableColumnDetector(), text)
    assert all(v in found for v in values), found
    assert "GB" not in found


@pytest.mark.parametrize("text", [
    '[{"code": "CHX", "name": "Charing Cross", "address": "12 Strand", "city": "London"}]',
    "store:\n  opening: 9-17\n  address:\n    street: 1 Main St\n    city: Springfield\n",
])
def test_a_place_or_a_shop_record_keeps_its_town_public(text: str) -> None:
    assert "London" not in masked(TableColumnDetector(), text)
    assert "Springfield" not in masked(TableColumnDetector(), text)


@pytest.mark.parametrize(("text", "found", "whole"), [
    ("gelegen aan de Van Woustraat 143-3hg, 1074 AH Amsterdam, bestaande uit",
     "Van Woustraat 143-3hg, 1074 AH", "Van Woustraat 143-3hg, 1074 AH Amsterdam"),
    ("címre: 1137 Budapest, Pozsonyi út 38. II. em. 5.", "1137 Budapest, Pozsonyi út 38",
     "1137 Budapest, Pozsonyi út 38. II. em. 5."),
    ("Neue Adresse: Schönhauser Allee 112, Hinterhaus, 3. OG links, 10439 Berlin",
     "Schönhauser Allee 112", "Schönhauser Allee 112, Hinterhaus, 3. OG links, 10439 Berlin"),
    ('la dire: Av. Cabildo 2847 piso 9 depto "C", Belgrano', "Av. Cabildo 2847",
     'Av. Cabildo 2847 piso 9 depto "C"'),
    ("au 27 rue des Tanneurs, bâtiment B, 4e étage, porte gauche, merci", "27 rue des Tanneurs",
     "27 rue des Tanneurs, bâtiment B, 4e étage, porte gauche"),
    ("כתובת: רחוב הרצל 112 דירה 9, קומה 3, רמת גן", "רחוב הרצל 112",
     "רחוב הרצל 112 דירה 9, קומה 3"),
    ("Nørrebrogade 184, 3. th.", "Nørrebrogade 184", "Nørrebrogade 184, 3. th."),
    ("Rua X 12 em Lisboa", "Rua X 12", "Rua X 12"),  # 'em' ("in") before a word is no floor
    ("12 Main St. Floor plans are online", "12 Main St", "12 Main St"),
])
def test_an_address_takes_its_flat_floor_and_town(text: str, found: str, whole: str) -> None:
    spans = DetectorChain([FindsOnly(found, "STREET_ADDRESS")], timeout_s=None).run(text).spans
    at = text.index(whole)
    assert [(s.start, s.end) for s in spans] == [(at, at + len(whole))]


@pytest.mark.parametrize(("text", "found", "entity", "whole"), [
    ("N.º de processo: 2019/004412\n", "004412", "MEDICAL_ID", "2019/004412"),
    ("N. cartella: DIA-2231/17, grazie", "2231", "MEDICAL_ID", "DIA-2231/17"),
    ("Nr legitymacji: 118/2023.", "2023", "PERSONAL_ID", "118/2023"),
    ("Логин в 1С / AD: abdullaev.t\n", "abdullaev", "USERNAME", "abdullaev.t"),
    ("ask user jdoe. Next time", "jdoe", "USERNAME", "jdoe"),  # a full stop, then a space
    ("id 12345 / 2024", "12345", "PERSONAL_ID", "12345"),  # spaces around: no join
])
def test_an_identifier_takes_the_groups_joined_to_it(text: str, found: str, entity: str,
                                                     whole: str) -> None:
    spans = DetectorChain([FindsOnly(found, entity)], timeout_s=None).run(text).spans
    assert [text[s.start:s.end] for s in spans] == [whole]
