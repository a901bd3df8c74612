"""Names listed after a label that lists people: found item by item, groups and words left."""

from __future__ import annotations

import pytest

from cacheprune.detectors import DetectorChain
from cacheprune.detectors.name_lists import NameListDetector


@pytest.fixture(scope="module")
def lists() -> NameListDetector:
    return NameListDetector()


@pytest.mark.parametrize(("text", "names"), [
    ('Present: R.J.M. (chair), P. Oyelowo, Bunny Harcourt, "Smudge" Pilkington\n'
     "Apologies: Old Tom from plot 14",
     ["P. Oyelowo", "Bunny Harcourt", '"Smudge" Pilkington']),
    ("出席者：山口（会長）、中村、渡辺 恵美、Ｋ．オルセン、近藤\n欠席者：石井",
     ["山口", "中村", "渡辺 恵美", "Ｋ．オルセン", "近藤", "石井"]),
    ("참조: 오세준 팀장님; 남궁 윤서; 제갈민\n받는 사람: 마케팅팀",
     ["오세준", "남궁 윤서", "제갈민"]),
    ("CC：チョウ ミン; 金子; 佐藤(総務)", ["チョウ ミン", "金子", "佐藤"]),
    ("Anwesend: Fuchs, Jens Vogel, Ayşe Demir-Schulte", ["Fuchs", "Jens Vogel",
                                                         "Ayşe Demir-Schulte"]),
    ("From: Dawn Fisher <dawn@example.com>\nTo: Will Baker; Customer Success",
     ["Dawn Fisher", "Will Baker"]),
    ("班主任：贺晓岚\n家长姓名：罗建国（父）、邓丽萍（母）\n调解员：欧阳慧。",
     ["贺晓岚", "罗建国", "邓丽萍", "欧阳慧"]),
    ("Απών: Νικόλαος Τσακίρης", ["Νικόλαος Τσακίρης"]),
    ("Attendees: Mrs. Jane Okafor, Dr Ade Bello, Prof. Kwame Mensah",
     ["Jane Okafor", "Ade Bello", "Kwame Mensah"]),
])
def test_each_listed_name_is_found(lists: NameListDetector, text: str,
                                   names: list[str]) -> None:
    assert [text[s.start:s.end] for s in lists.detect(text)] == names


@pytest.mark.parametrize("text", [
    "To: Marketing Team <mkt@example.com>\nCc: Legal, Finance, Sales",
    "Minutes: Approved as read\nSecretary: vacant\nChair: TBD",
    "Entschuldigt: Fuchs",  # a lone surname that is also a noun: left to the other detectors
    "担当：総務部\n宛先：各位\n貸主：株式会社十三パーキング（以下「甲」という）",
    "A: Thank you for having me.\nQ: Where were you born?",
    "Present: 14 members, quorum reached",
    "The meeting was present: nothing to report",
    # a transcript's speaker lines: 'Chair' speaks, it lists no one
    "Chair: Any concerns?\nChair: So the proposal is cork\nChair: Then the mural it is. Good.",
])
def test_groups_roles_and_sentences_are_left_alone(lists: NameListDetector, text: str) -> None:
    assert lists.detect(text) == []


def test_a_listed_name_is_masked_where_it_recurs() -> None:
    text = "出席者：山口、渡辺恵美\n\n議事：渡辺恵美より予算案の説明があった。"
    spans = DetectorChain([NameListDetector()], timeout_s=None).run(text).spans
    assert sorted(text[s.start:s.end] for s in spans) == ["山口", "渡辺恵美", "渡辺恵美"]
