"""Names: the tricky forms one by one, ordinary words left alone, whole names from partial spans."""

from __future__ import annotations

import pytest
from detectors_faults import FindsOnly
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.detectors import Detector, DetectorChain
from cacheprune.detectors.name_candidates import NameCandidates, PlausibleName
from cacheprune.detectors.names import NameDetector


@pytest.fixture(scope="module")
def names() -> NameDetector:
    return NameDetector()


def found(detector: Detector, text: str) -> list[str]:
    return sorted(text[s.start:s.end] for s in detector.detect(text))


@pytest.mark.parametrize(("text", "expected"), [
    ("My name is José García and I need help.", ["José García"]),
    ("Please ask Nguyễn Thị Minh Khai to sign.", ["Nguyễn Thị Minh Khai"]),
    ("I spoke to Siobhán O'Brien yesterday.", ["Siobhán O'Brien"]),
    ("The witness, Maria de la Cruz, confirmed it.", ["Maria de la Cruz"]),
    ("Forward it to Dana Reyes-Ortiz today.", ["Dana Reyes-Ortiz"]),
    ("Our landlord is Jan van der Berg.", ["Jan van der Berg"]),
    ("Please contact Ahmed Al-Farsi about it.", ["Ahmed Al-Farsi"]),
    ("It belongs to Omar bin Khalid, not to me.", ["Omar bin Khalid"]),
    ("Zoë Müller-Lüdenscheidt signed the form.", ["Zoë Müller-Lüdenscheidt"]),
    ("Tanaka Hiroshi is our contact in Osaka.", ["Tanaka Hiroshi"]),  # family name first
    ("Ask Анна Петрова for the key.", ["Анна Петрова"]),
    ("王伟先生明天会来。", ["王伟"]),
    ("my neighbour john smith keeps parking here", ["john smith"]),  # lower case
    ("I'm Priya, the new intern.", ["Priya"]),  # a lone given name after a cue
    ("hey, it's marco here", ["marco"]),  # lower case after a cue
    ("Regards,\nLukas", ["Lukas"]),
    ("Thanks,\nHannah Schmidt", ["Hannah Schmidt"]),
    ("Dear Mr. Okonkwo, thank you.", ["Okonkwo"]),
    ("Can you tell Bill that Grant Wilson called?", ["Bill", "Grant Wilson"]),
    ("O'Neill, Patrick: account holder", ["O'Neill, Patrick"]),  # family name, comma, given
    ("Please call Ms. O'Sullivan.", ["O'Sullivan"]),
])
def test_tricky_name_forms_are_found_whole(names, text: str, expected: list[str]) -> None:
    assert found(names, text) == expected


@pytest.mark.parametrize("text", [
    "In May the committee will grant the request and pay the bill.",
    "Mark the box if the rate rose. Will it rise again? May be.",
    "Grant access to the folder, then Bill the client for the hours.",
    "Rose petals and Long Short-Term Memory networks.",
    "We use the Adam optimizer, BERT and Table 3 of Section 4.",
    "New York and Paris are cities; the Data Augmentation section follows.",
    "We flew from Paris, France to Lima, Peru.",
])
def test_ordinary_words_that_are_also_names_stay_public(names, text: str) -> None:
    assert found(names, text) == []


@pytest.mark.parametrize("text", [
    "Kantor tutup pada 8-14 Maret 2027 dan kembali melayani pada Senin, 15 Maret 2027.",
    "Covid vaccinations: walk in Tue & Thu mornings. Opening hours: Mon, Tue, Thu, Fri 9:00.",
    "– Lundi 10 mars : photo de classe",
    "Ab Montag, dem 9. März, wird die Brücke gesperrt; im Oktober gibt es Federweißer.",
    "Bei Fragen erreichen Sie uns Mo-Fr 8-20 Uhr.",
    "Liebe Eltern, unser Sommerfest findet statt. Beim Einfügen trat ein Fehler auf.",
])
def test_weekdays_months_and_german_sentence_openers_are_no_names(names, text: str) -> None:
    assert found(names, text) == []


@pytest.mark.parametrize("text", [
    "Head north along Rue Victor Hugo, then cross the Avenida Rio Branco.",
    "Quase todas as cidades têm uma Praça Marquês de Pombal.",
    "Kreissparkasse Oberland · Konrad-Adenauer-Platz 3 · 83022 Rosenheim",
    "Votre agence Place Jean-Jaurès fermera définitivement.",
    "Un saludo,\nDepartamento de Recursos Humanos",
    "Saygılarımızla,\nİnsan Kaynakları Departmanı",
    "Distinti saluti.\n\nBanca Popolare del Golfo",
])
def test_streets_named_after_people_and_organisations_are_no_persons(names, text: str) -> None:
    assert found(names, text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("April Johnson called, and so did Jan Kowalski.", ["April Johnson", "Jan Kowalski"]),
    ("Liebe Anna, danke für die Blumen.", ["Anna"]),  # the salutation is a cue
    ("Nguyễn Thị Thu đã gọi điện.", ["Nguyễn Thị Thu"]),
    ("I met Victor Hugo Ramírez at the Rue Victor Hugo office.", ["Victor Hugo Ramírez"]),
])
def test_names_that_are_also_months_or_weekdays_stay_names(names, text: str,
                                                           expected: list[str]) -> None:
    assert found(names, text) == expected


@pytest.mark.parametrize(("text", "part", "whole"), [
    ("My name is José García.", "José", "José García"),
    ("Ask Nguyễn Thị Minh Khai now", "Minh", "Nguyễn Thị Minh Khai"),
    ("with Siobhán O'Brien today", "Siobhán", "Siobhán O'Brien"),
    ("then Maria de la Cruz left", "Cruz", "Maria de la Cruz"),
    ("to Dana Reyes-Ortiz, thanks", "Dana", "Dana Reyes-Ortiz"),
    ("by Garcí", "Garc", "Garcí"),  # any span is grown to the word it cuts
    ("Signed: M. Okonkwo, HR", "Okonkwo", "M. Okonkwo"),  # initials and their periods
    ("Naam: J.M. de Groot-Bakker\n", "Groot-Bakker", "J.M. de Groot-Bakker"),
    ("Applicant ГУСЕЙНОВ Р. А. submitted", "ГУСЕЙНОВ", "ГУСЕЙНОВ Р. А."),
    ("with Clara J. at noon", "Clara", "Clara J."),
    ("Liebe Grüße\nTheo Trung", "Trung", "Theo Trung"),  # not the line break before it
])
def test_the_chain_grows_partial_names_to_the_whole_name(text: str, part: str, whole: str) -> None:
    spans = DetectorChain([FindsOnly(part)], timeout_s=None).run(text).spans
    at = text.index(whole)
    assert [(s.start, s.end) for s in spans] == [(at, at + len(whole))]
    unchanged = DetectorChain([FindsOnly(part)], timeout_s=None, whole_values=False)
    at = text.index(part)
    assert [(s.start, s.end) for s in unchanged.run(text).spans] == [(at, at + len(part))]


def test_a_surname_takes_the_comma_before_the_given_name_found_apart() -> None:
    text = "From: NOVÁKOVÁ, Jana <jana@example.org>"
    given = FindsOnly("Jana")
    given.name = "finds-given-name"
    chain = DetectorChain([FindsOnly("NOVÁKOVÁ"), given], timeout_s=None)
    assert sorted(text[s.start:s.end] for s in chain.run(text).spans) == ["Jana", "NOVÁKOVÁ, "]


@pytest.mark.parametrize(("phrase", "plausible"), [
    ("Jane Doe", True), ("Okonkwo", True), ("Deep Learning", False), ("BIBREF21", False),
    ("w_i$", False), ("al", False), ("Related Works", False), ("BISAC", False),
    ("Mark", False), ("Will", False), ("Mark Johnson", True), ("Victoria", True),
    ("La Administración", False), ("Departamento de Recursos Humanos", False),
    ("Rue Victor Hugo", False), ("Victor Hugo", True), ("Nelson Mandela Drive", False),
    ("Glenn Close", True), ("Harriet Lane", True),
])
def test_other_detectors_person_spans_are_checked_for_plausibility(phrase, plausible) -> None:
    assert PlausibleName()(phrase) is plausible


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([
    "The model is trained on Table 3. ", "Priya Patel wrote it. ", "Results improve.\n",
    "Mr. Saltram came late. ", "We thank Kwame! ", "BERT and GPT differ. ", "x ", "\n\n",
]), max_size=12))
def test_name_sentences_map_back_to_the_same_characters(pieces: list[str]) -> None:
    text = "".join(pieces)
    joined = NameCandidates().join(text)
    for index, char in enumerate(joined.text):
        mapped = joined.original_span(index, index + 1)
        if mapped is None:
            assert joined.text[index] == "\n"  # the blank lines between kept sentences
            continue
        assert text[mapped[0]:mapped[1]] == char
    # Every sentence with a name is kept, every one made of ordinary words is not.
    for sentence in ("Priya Patel wrote it.", "Mr. Saltram came late.", "We thank Kwame!"):
        assert (sentence in joined.text) == (sentence in text)
    assert "Results improve." not in joined.text


@pytest.mark.parametrize("text", [
    "للاستفسار يرجى الاتصال بمركز خدمة العملاء على الرقم المجاني 800 124 0000.",
    "משרד התיירות הודיע כי מוזיאון ישראל יאריך את שעות הפתיחה במהלך חג הסוכות.",
    "보다 안정적인 서비스 제공을 위해 아래와 같이 정기 점검을 실시합니다.",
    "कल सुबह बैठक से पहले सभी रिपोर्ट तैयार रखें और टीम को सूचित करें।",
    # alone or between Latin words, a phrase with a stop word ('غير' "not", 'است' "is")
    "رقم التحقق غير صحيح", "Run the job في خدمة today", "همیشه مبهم است",
])
def test_sentences_in_scripts_without_case_are_not_names(names, text: str) -> None:
    # Every word of such a script reads as 'capitalized'; a sentence is no run of names.
    assert found(names, text) == []


@pytest.mark.parametrize(("text", "name"), [
    ("श्री राजेश कुमार शर्मा ने फॉर्म भरा।", "राजेश कुमार शर्मा"),  # title, then a sentence
    ("आज श्री राजेश कुमार शर्मा ने फॉर्म भरा।", "राजेश कुमार शर्मा"),
    ("Dear Mr. محمد العلي, thanks", "محمد العلي"),
    ("Please ask محمد العلي about it.", "محمد العلي"),
    ("Regards,\nأحمد الفارسي", "أحمد الفارسي"),
])
def test_names_in_scripts_without_case_are_found_after_a_title_or_cue(names, text: str,
                                                                      name: str) -> None:
    assert name in found(names, text)


@pytest.mark.parametrize(("text", "expected"), [
    ("Καλησπέρα κ. Παπαδάκη, το όχημά σας", ["Παπαδάκη"]),
    ("rozmowa z udziałem kierownika działu, pana Wróblewskiego.", ["Wróblewskiego"]),
    ("Tafadhali mwambie Bw. Otieno Kamau kwamba", ["Otieno Kamau"]),
    ("disturbato durante la lezione della prof.ssa Marino.", ["Marino"]),
    ("nopol B 4127 KZL milik Pak Hendra Gunawan", ["Hendra Gunawan"]),
    # three words after a title of a caseless script, a fourth where the gazetteer knows it,
    # never a function word ('في' "in")
    ("يرجى مراجعة الأستاذة نورة الشهري في مكتب القبول.", ["نورة الشهري"]),
    ("يتشرف السيد خالد عبد الرحمن الزعبي بدعوتكم", ["خالد عبد الرحمن الزعبي"]),
    ("הריני לאשר כי מר יוסי אברהמי", ["יוסי אברהמי"]),
    ("Merci de vous munir de la pièce d'identité de M. Rousseau.", ["Rousseau"]),
    ("احتراماً به اطلاع می‌رساند خانم مریم حسینی‌نژاد در تاریخ", ["مریم حسینی\u200cنژاد"]),
    ("நம் பாட்டி திருமதி. கமலா ராமசாமி அவர்கள்", ["கமலா ராமசாமி"]),
    # a second title in the same run starts a second name
    ("श्रीमती सविता एवं श्री राजेंद्र प्रसाद गुप्ता", ["राजेंद्र प्रसाद गुप्ता", "सविता"]),
])
def test_titles_of_more_languages_introduce_a_name(names, text: str, expected: list[str]) -> None:
    # The chain's growth then takes the title too (whole_values.py).
    assert found(names, text) == sorted(expected)


def test_a_single_letter_is_no_title_before_an_ordinary_word(names) -> None:
    assert found(names, "Size M. The shirt is fine. See p. The next page.") == []


def test_av_is_an_avenue_not_a_lawyers_title(names) -> None:
    # Turkish lawyers write 'Av.' too; 'Avukat' stays a title.
    assert found(names, "Distribuidora Horizonte Ltda.\nAv. Paulista, 1578") == []
    assert found(names, "Vekil: Avukat Mehmet Yılmaz") == ["Mehmet Yılmaz"]


@pytest.mark.parametrize(("text", "expected"), [
    ("新郎 王浩然 & 新娘 林思琪", ["林思琪", "王浩然"]),
    ("新郎父母：王建国 李秀兰\n新娘父母：林志明 陈美玲", ["李秀兰", "林志明", "王建国", "陈美玲"]),
    ("负责人：运维 高磊\n影响时长：38 分钟", ["高磊"]),
    ("A차량: 152로 6093 (운전자 김도윤)", ["김도윤"]),
    ("연락처: 010-6620-1748 (보호자: 아내 정수진)", ["정수진"]),
    ("신랑 박준호 · 신부 이서연", ["박준호", "이서연"]),  # the second label is no name
    ("담당자 김민수가 연락드립니다", ["김민수"]),  # a particle after the name
    ("故人 佐々木 清（享年八十八）", ["佐々木 清"]),
    ("〇〇クリニック 院長 山本\n", ["山本"]),
    ("担当の佐々木が伺います", ["佐々木"]),
])
def test_names_of_cjk_scripts_after_a_word_that_says_this_person(names, text: str,
                                                                 expected: list[str]) -> None:
    assert found(names, text) == sorted(expected)


@pytest.mark.parametrize("text", [
    "我是初一（3）班的学生，明天请假。", "新郎新娘的父母很高兴", "운전자 보험 가입 안내",
    "担当者までご連絡ください。",
])
def test_a_cjk_label_without_a_family_name_after_it_finds_nothing(names, text: str) -> None:
    assert found(names, text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("Cc: Bill Sommer <bs@example.com>, Winter, Ingrid <iw@example.com>",
     ["Bill Sommer", "Ingrid", "Winter, Ingrid"]),
    ('29117,SUBA,"NGUYEN, BAO",100.00', ["NGUYEN, BAO"]),
    ("WINTER, Eleanor Mary (née Hope)\nPeacefully at home", ["Eleanor Mary", "WINTER, Eleanor"]),
])
def test_a_family_name_that_is_a_word_before_a_comma_and_a_given_name_in_an_item(
        names, text: str, expected: list[str]) -> None:
    assert found(names, text) == sorted(expected)


def test_a_word_before_a_comma_and_a_name_in_a_sentence_stays_public(names) -> None:
    assert "Ingrid" in found(names, "In winter, Ingrid went home.")
    assert not [v for v in found(names, "In winter, Ingrid went home.") if "inter" in v]


@pytest.mark.parametrize(("text", "part", "whole"), [
    ("我是王浩然的同学", "王浩然", "王浩然"),  # a sentence: the span's own edges stay
    ("佐々木さんに渡しました", "佐々木", "佐々木"),
    ("小林 さくら\n", "さ", "さくら"),  # a short run between spaces is one word
    ("นางสาวพรทิพย์ ศรีสุข ได้", "ศรี", "ศรีสุข"),
])
def test_a_span_in_a_script_without_spaces_is_not_grown_over_the_sentence(
        text: str, part: str, whole: str) -> None:
    spans = DetectorChain([FindsOnly(part)], timeout_s=None).run(text).spans
    assert [text[s.start:s.end] for s in spans] == [whole]


@pytest.mark.parametrize(("text", "expected"), [
    ("[09:03] tomi_b: and tell kemi i said hi", ["kemi"]),  # not 'i said' ('said' is a name too)
    ("[18:40] paz: oye dile a guille que mañana no hay entreno", ["guille"]),
    ("[20:14] Jonas: sag mal der annika bescheid", ["Jonas", "annika"]),
    ("y dile a la rosi que venga", ["rosi"]),
    ("dile que venga mañana", []),  # 'que' is a word of Spanish, whatever the gazetteer says
    ("ask the manager about it", []),
])
def test_a_given_name_in_lower_case_after_a_chats_cue_in_many_languages(
        names, text: str, expected: list[str]) -> None:
    assert found(names, text) == expected


@pytest.mark.parametrize(("text", "name"), [
    ("ผู้ปฏิบัติงานแทน: นายธีรวัฒน์ บุญมา\n", "ธีรวัฒน์ บุญมา"),
    ("ระหว่าง นางสาวกมลชนก ศรีสุวรรณ (น้องแพม) บุตรี", "กมลชนก ศรีสุวรรณ"),
    ("ผู้ปกครองของ เด็กชายปกรณ์ จันทร์เพ็ญ นักเรียน", "ปกรณ์ จันทร์เพ็ญ"),
])
def test_thai_names_after_a_title_written_against_them(names, text: str, name: str) -> None:
    assert name in found(names, text)


def test_thai_words_that_start_like_a_title_are_no_title(names) -> None:
    # 'นายกรัฐมนตรี' is "prime minister", 'นางพยาบาล' "nurse": no name starts after 'นาย'/'นาง'
    assert not any(v.startswith(("กรัฐมนตรี", "พยาบาล"))
                   for v in found(names, "นายกรัฐมนตรี ประยุทธ์ กล่าว นางพยาบาล สมใจ ดูแล"))
