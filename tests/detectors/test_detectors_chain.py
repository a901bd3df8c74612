"""The chain: union of detectors, thresholds, allow-list, public ranges, and failing closed."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from cacheprune.detectors import (
    Detector,
    DetectorChain,
    DetectorConfigError,
    RuleDetector,
    ScoreThresholds,
    Span,
    available_detectors,
    build_detector,
    mask_text,
    register_detector,
    scan_pieces,
)
from cacheprune.detectors.whole_values import whole_values


class SubstringDetector(Detector):
    """A second, naive implementation: every occurrence of fixed words, found by str.find."""

    def __init__(self, words: list[str], entity: str = "WORD", score: float = 1.0,
                 name: str = "substring") -> None:
        self.words, self.entity, self.score, self.name = words, entity, score, name

    def detect(self, text: str) -> list[Span]:
        spans = []
        for word in self.words:
            at = text.find(word)
            while at != -1:
                spans.append(Span(self.entity, at, at + len(word), self.score, self.name))
                at = text.find(word, at + 1)
        return spans


class RaisingDetector(Detector):
    name = "raising"

    def detect(self, text: str) -> list[Span]:
        raise RuntimeError(f"fault injected on purpose while scanning {text!r}")


class HangingDetector(Detector):
    """Blocks until released: a fault injected on purpose (a detector that never answers)."""

    name = "hanging"

    def __init__(self) -> None:
        self.release = threading.Event()

    def detect(self, text: str) -> list[Span]:
        self.release.wait(30)
        return []


TEXT = "alpha beta gamma beta delta"


def rules(**spec_overrides) -> RuleDetector:
    spec = {"rules": [{"name": "beta", "entity": "WORD", "deny_list": ["beta"], "score": 0.7}]}
    spec.update(spec_overrides)
    return RuleDetector(spec=spec)


def test_chain_is_the_union_of_its_detectors() -> None:
    chain = DetectorChain([rules(), SubstringDetector(["gamma", "delta"])], timeout_s=None)
    found = {(s.start, s.end) for s in chain.run(TEXT).spans}
    expected = {(TEXT.find(w, i), TEXT.find(w, i) + len(w)) for w in ["beta", "gamma", "delta"]
                for i in range(len(TEXT)) if TEXT.find(w, i) != -1}
    assert found == expected


def test_thresholds_and_allow_list() -> None:
    detectors = [rules(), SubstringDetector(["gamma", "delta"], score=0.4)]
    chain = DetectorChain(detectors, thresholds=ScoreThresholds(0.5, {"WORD": 0.6}),
                          allow_list=["  BETA "])
    assert chain.run(TEXT).spans == []
    chain = DetectorChain(detectors, thresholds=ScoreThresholds(0.0, {"WORD": 0.5}))
    assert {TEXT[s.start:s.end] for s in chain.run(TEXT).spans} == {"beta"}


def test_public_ranges_are_not_scanned() -> None:
    chain = DetectorChain([SubstringDetector(["beta"])])
    first = TEXT.find("beta")
    second = TEXT.find("beta", first + 1)
    spans = chain.run(TEXT, public_ranges=[(0, first + 4)]).spans
    assert [(s.start, s.end) for s in spans] == [(second, second + 4)]
    # A word cut by a public range is no longer seen whole: the chain scans pieces only.
    assert chain.run(TEXT, public_ranges=[(second + 2, second + 3)]).spans[1:] == []


def test_scan_pieces_is_the_complement_of_the_public_ranges() -> None:
    for ranges in ([], [(0, 5)], [(3, 7), (5, 9)], [(0, 27)], [(4, 4), (10, 12), (1, 2)]):
        pieces = scan_pieces(27, ranges)
        public = {i for a, b in ranges for i in range(a, b)}
        scanned = [i for a, b in pieces for i in range(a, b)]
        assert scanned == [i for i in range(27) if i not in public]
    with pytest.raises(ValueError, match="public range"):
        scan_pieces(10, [(5, 11)])


def test_a_raising_detector_fails_closed_and_masks_everything() -> None:
    chain = DetectorChain([SubstringDetector(["beta"]), RaisingDetector()])
    result = chain.run(TEXT)
    assert result.failed_closed and result.spans == []
    assert result.reason == "detector 'raising' raised RuntimeError"
    assert TEXT not in result.reason  # the reason never quotes the request
    offsets = [(i, i + 1) for i in range(len(TEXT))]
    masked = mask_text(chain, TEXT, offsets)
    assert masked.mask.all() and masked.detection.failed_closed


def test_a_hanging_detector_fails_closed_within_the_budget() -> None:
    hanging = HangingDetector()
    try:
        chain = DetectorChain([SubstringDetector(["beta"]), hanging], timeout_s=0.2)
        result = mask_text(chain, TEXT, [(0, 5), (5, 27)])
    finally:
        hanging.release.set()
    assert result.detection.failed_closed
    assert "'hanging' did not finish" in (result.detection.reason or "")
    assert np.array_equal(result.mask, [True, True])


class ThreadRecordingDetector(SubstringDetector):
    """Records the thread each call ran in; `runs_in_calling_thread` as a model's detector."""

    runs_in_calling_thread = True

    def __init__(self, words: list[str], delay_s: float = 0.0) -> None:
        super().__init__(words, name="in-caller")
        self.delay_s = delay_s
        self.threads: list[int] = []

    def detect(self, text: str) -> list[Span]:
        self.threads.append(threading.get_ident())
        threading.Event().wait(self.delay_s)
        return super().detect(text)


def test_a_model_detector_runs_in_the_callers_thread_and_the_rules_in_the_worker() -> None:
    in_caller = ThreadRecordingDetector(["alpha"])
    worker_threads: list[int] = []

    class Recording(SubstringDetector):
        def detect(self, text: str) -> list[Span]:
            worker_threads.append(threading.get_ident())
            return super().detect(text)

    chain = DetectorChain([Recording(["beta"]), in_caller], timeout_s=5.0)
    result = chain.run(TEXT, public_ranges=[(5, 6)])  # two pieces
    assert not result.failed_closed
    assert in_caller.threads == [threading.get_ident()] * 2
    assert len(worker_threads) == 2 and threading.get_ident() not in worker_threads
    assert {(s.detector, TEXT[s.start:s.end]) for s in result.spans} >= {
        ("in-caller", "alpha"), ("substring", "beta")}
    inline = DetectorChain([Recording(["beta"]), in_caller], timeout_s=None).run(
        TEXT, public_ranges=[(5, 6)])
    assert inline.spans == result.spans


def test_a_model_detector_counts_in_the_budget() -> None:
    slow = ThreadRecordingDetector(["alpha"], delay_s=0.3)
    chain = DetectorChain([SubstringDetector(["beta"]), slow], timeout_s=0.1)
    result = chain.run(TEXT)
    assert result.failed_closed and result.spans == []
    assert result.reason == ("detector 'in-caller' did not finish within the chain's time "
                             "budget of 0.1 s")
    raising = DetectorChain([SubstringDetector(["beta"]), ThreadRecordingDetector(["alpha"]),
                             RaisingDetector()], timeout_s=5.0).run(TEXT)
    assert raising.failed_closed and raising.reason == "detector 'raising' raised RuntimeError"


def test_a_catastrophic_regex_times_out_at_run_time_and_fails_closed() -> None:
    # Passes the load-time probes (runs of its literals never follow one 'Q') but explodes here.
    pattern = r"Q(?:x|xx)+y"
    detector = RuleDetector(spec={"regex_timeout_s": 0.05, "rules": [
        {"name": "slow", "entity": "X", "patterns": [{"regex": pattern, "score": 1.0}]}]})
    result = DetectorChain([detector]).run("Q" + "x" * 60)
    assert result.failed_closed
    assert result.reason == "detector 'rules' raised TimeoutError"


def test_a_detector_returning_a_span_beyond_its_text_fails_closed() -> None:
    class Liar(Detector):
        name = "liar"

        def detect(self, text: str) -> list[Span]:
            return [Span("X", 0, len(text) + 5, 1.0, self.name)]

    result = DetectorChain([Liar()]).run("short", public_ranges=[(2, 3)])
    assert result.failed_closed and "outside its text" in (result.reason or "")


def test_registry_builds_builtins_user_classes_and_import_paths() -> None:
    assert {"rules", "presidio"} <= set(available_detectors())
    assert isinstance(build_detector("rules"), RuleDetector)
    register_detector("substring-test", SubstringDetector)
    built = build_detector("substring-test", words=["beta"])
    assert built.detect(TEXT)[0].start == TEXT.find("beta")
    by_path = build_detector(f"{__name__}:SubstringDetector", words=["x"])
    assert isinstance(by_path, SubstringDetector)


def test_registry_errors_list_what_is_available() -> None:
    with pytest.raises(DetectorConfigError, match=r"unknown detector 'nope'.*available: .*rules"):
        build_detector("nope")
    with pytest.raises(DetectorConfigError, match="module 'no_such_pkg.mod' was not found"):
        build_detector("no_such_pkg.mod:Cls")
    with pytest.raises(DetectorConfigError, match="is not a Detector class"):
        build_detector("collections:OrderedDict")
    with pytest.raises(DetectorConfigError, match="does not accept options"):
        build_detector("rules", colour="red")
    with pytest.raises(ValueError, match="already exists"):
        register_detector("rules", SubstringDetector)


def test_chain_rejects_bad_construction() -> None:
    with pytest.raises(ValueError, match="at least one detector"):
        DetectorChain([])
    with pytest.raises(ValueError, match="repeated"):
        DetectorChain([SubstringDetector([]), SubstringDetector([])])
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        DetectorChain([SubstringDetector([])], timeout_s=0)


class FirstOnlyDetector(Detector):
    """Finds only the first occurrence of each word: a detector that misses the repeats."""

    name = "first_only"

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def detect(self, text: str) -> list[Span]:
        return [Span("PERSON", text.find(w), text.find(w) + len(w), 0.8, self.name)
                for w in self.words if w in text]


def test_a_value_found_once_is_masked_wherever_it_recurs_as_a_whole_word() -> None:
    text = "Lukas: hi\nゆうこ: はい\nbring Lukas and Lukasz; Lukas's bike; ゆうこさんに聞いて"
    chain = DetectorChain([FirstOnlyDetector(["Lukas", "ゆうこ"])], timeout_s=None)
    found = sorted((s.start, text[s.start:s.end]) for s in chain.run(text).spans)
    lukas = [i for i in range(len(text)) if text.startswith("Lukas", i)
             and not text.startswith("Lukasz", i)]
    yuko = [i for i in range(len(text)) if text.startswith("ゆうこ", i)]
    assert found == sorted([(i, "Lukas") for i in lukas] + [(i, "ゆうこ") for i in yuko])


def test_skipped_text_is_not_scanned_but_a_value_found_elsewhere_recurs_into_it() -> None:
    text = "Lukas: hi\nthe office opens at nine; ask Lukas at the desk\nbring Lukas tomorrow"
    skipped = (text.index("the office"), text.index("\nbring"))
    chain = DetectorChain([FirstOnlyDetector(["Lukas"])], timeout_s=None)
    found = sorted(s.start for s in chain.run(text, skipped=[skipped]).spans)
    assert found == [i for i in range(len(text)) if text.startswith("Lukas", i)]
    # The skipped text alone: nothing was scanned there, so nothing is found in it.
    only_skipped = text[skipped[0]:skipped[1]]
    assert chain.run(only_skipped, skipped=[(0, len(only_skipped))]).spans == []


def test_a_verb_found_as_a_name_is_not_copied_and_nothing_without_whole_values() -> None:
    text = "Dear May, see you. May I ask? May said yes."
    chain = DetectorChain([FirstOnlyDetector(["May"])], timeout_s=None)
    assert [(s.start, s.end) for s in chain.run(text).spans] == [(5, 8)]
    text = "Anna, ask Anna."
    plain = DetectorChain([FirstOnlyDetector(["Anna"])], timeout_s=None, whole_values=False)
    assert [(s.start, s.end) for s in plain.run(text).spans] == [(0, 4)]


@pytest.mark.parametrize(("text", "found", "whole"), [
    ("pw is still Kumo2025! okay?", "Kumo2025", "Kumo2025!"),
    ("新门禁密码是 #2046*，周五之前都有效", "2046", "#2046*"),
    ("SMTP_PASS=Jasmine.Rain.0412\n", "Rain", "Jasmine.Rain.0412"),
    ('"password": "Tulip!2024",', "Tulip", "Tulip!2024"),
])
def test_a_secret_is_grown_over_the_characters_it_stands_in(text: str, found: str,
                                                            whole: str) -> None:
    start = text.index(found)
    (span,) = whole_values(text, [Span("SECRET", start, start + len(found), 0.9, "test")])
    assert text[span.start:span.end] == whole


@pytest.mark.parametrize(("entity", "text", "found", "whole"), [
    # plates: the groups of the plate beside the part found, never a lower-case word
    ("LICENSE_PLATE", "dla samochodu o nr rej. GD 7K412 (Skoda Fabia)", "7K412", "GD 7K412"),
    ("LICENSE_PLATE", "phương tiện mang biển số 51F-123.45 vi phạm", "51F", "51F-123.45"),
    ("LICENSE_PLATE", "Rekisterinumero: KTX-418\n", "KTX-", "KTX-418"),
    ("LICENSE_PLATE", "Motor saya B 4127 UKT, parkir di depan", "B 4127", "B 4127 UKT"),
    ("LICENSE_PLATE", "the van AB 123 CD in the yard", "123", "AB 123 CD"),
    # dates of birth: digit groups, the last dot of a Korean or Hungarian date, eras, Hijri
    ("DATE_OF_BIRTH", "дату рождения как писать, 12.03.98 или", "12.03.", "12.03.98"),
    ("DATE_OF_BIRTH", "Születési dátum: 1990. 08. 19.\n", "1990. 08. 19", "1990. 08. 19."),
    ("DATE_OF_BIRTH", "born 12/03/1998. Then", "12/03/1998", "12/03/1998"),
    ("DATE_OF_BIRTH", "مواليد ١٩٨٦/٠٥/٢٢ حضر", "١٩٨٦", "١٩٨٦/٠٥/٢٢"),
    ("DATE_OF_BIRTH", "تاريخ الميلاد: ١٤٠٨/٠٣/١٢ هـ\n", "١٤٠٨/٠٣/١٢", "١٤٠٨/٠٣/١٢ هـ"),
    ("DATE", "born 1990-05-12 10:30", "1990-05", "1990-05-12"),
    ("DATE_OF_BIRTH", "借主：山口 翔太（平成 7年2月28日生）", "7年2月28日生", "平成 7年2月28日生"),
    # display names with their emoji; a bracket a span opens is closed
    ("USERNAME", "[08/03/25 19:24] Rafa 🦋: oi gente", "Rafa", "Rafa 🦋"),
    ("USERNAME", "10:05\tYui☆\tわたし", "Yui", "Yui☆"),
    ("USERNAME", "ping @hkowalczyk about it", "hkowalczyk", "@hkowalczyk"),
    ("SECRET", "my pin is 48210000. When", "48210000", "48210000"),
    ("SECRET", "password Kumo2025! ok", "Kumo2025", "Kumo2025!"),
    ("USERNAME", "user bob (admin) says hi", "bob", "bob"),
    ("USERNAME", "token `ghp_xxxx` here", "ghp_xxxx", "ghp_xxxx"),
    # and no further: a count after a plate, an address around a digit read as a date
    ("LICENSE_PLATE", "车型 GDH201V 18台", "GDH201V", "GDH201V"),
    ("DATE_OF_BIRTH", "subnet 172.18.0.0/16 for the pods", "0", "0"),
    ("DATE_OF_BIRTH", "urodzona 3 września 1979 r. w Krakowie", "3 września 1979 r.",
     "3 września 1979 r."),
    ("STREET_ADDRESS", "정자일로 95, 704호 (우 13558) 로 보내줘", "정자일로 95, 704호 (우 13558",
     "정자일로 95, 704호 (우 13558)"),
])
def test_plates_dates_and_display_names_are_grown_to_their_whole_value(
        entity: str, text: str, found: str, whole: str) -> None:
    start = text.index(found)
    (span,) = whole_values(text, [Span(entity, start, start + len(found), 0.9, "test")])
    assert text[span.start:span.end] == whole
