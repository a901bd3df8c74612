"""PII-free text for training negatives: numbers and names of public things, papers, stories,
prose in many languages.

The first model masked such text (`PEP 632` as a plate, `16.2` as an IP address, `Table 2,
BIBREF12` as a person, `Building 7, Floor 3` as an address), since its negatives held few
numbers. `PUBLIC_FILLERS` make one public piece each; `PUBLIC_NEGATIVES` are whole PII-free
texts of the genres the detector reads (papers and stories too, whose prose the eval serves),
and prose in other languages; the `{_public}` filler is one of them, set around private values
as context. None of this is
read from the datasets the benchmarks measure, and none of it shares the held-out split's
wordings.
"""

from __future__ import annotations

import random
from collections.abc import Callable

_STANDARDS = ("PEP", "RFC", "ISO", "IEC", "IEEE", "ECMA", "CVE-2023-", "CWE-", "EN", "DIN",
              "KB", "JSR", "BS", "ANSI", "ITU-T G.", "W3C")
_TOOLS = ("Python", "Node.js", "PostgreSQL", "Redis", "nginx", "Ubuntu", "Debian", "Java",
          "Go", "Rust", "React", "Django", "Kafka", "Spark", "TensorFlow", "PyTorch", "CUDA",
          "Windows", "macOS", "Android", "iOS", "Chrome", "Firefox", "OpenSSL", "Terraform")
_MODELS = ("BERT-base", "RoBERTa-large", "GPT-2", "T5-small", "LLaMA-2-7B", "ResNet-50",
           "ViT-B/16", "XLNet", "ELECTRA", "BiLSTM-CRF", "Transformer-XL", "word2vec", "GloVe")
_DATASETS = ("SQuAD 2.0", "GLUE", "CoNLL-2003", "ImageNet", "WMT'14", "MS MARCO", "SST-2",
             "OntoNotes 5.0", "Penn Treebank", "WikiText-103", "MNLI", "HotpotQA")
_UNITS = ("ms", "MB", "GB", "km", "kg", "mm", "%", "°C", "Hz", "kW", "px", "tokens", "epochs")
_ROOMS = ("Building", "Floor", "Room", "Gate", "Hall", "Level", "Wing", "Platform", "Dock",
          "Bay", "Aisle", "Lab", "Suite", "Terminal", "Zone")
_PLACES = ("Paris", "Berlin", "Tokyo", "Lagos", "Lima", "Oslo", "Cairo", "Seoul", "Toronto",
           "Mumbai", "Warsaw", "Hanoi", "Istanbul", "Madrid", "Prague", "Athens", "Sydney")


def _salad(rng: random.Random) -> str:
    """1-3 sentences of English words with public numbers and names set at random places, so
    that no template's wording is what marks a text as PII-free."""
    from faker.providers.lorem.en_US import Provider

    sentences = []
    for _ in range(rng.randint(1, 3)):
        words = rng.sample(Provider.word_list, rng.randint(6, 16))
        for _ in range(rng.randint(1, 3)):
            piece = PUBLIC_FILLERS[rng.choice(_SALAD_PIECES)](rng)
            words.insert(rng.randrange(len(words) + 1), piece)
        text = " ".join(words)
        sentences.append(text[0].upper() + text[1:] + rng.choice((".", ".", ";", ":", "?")))
    return " ".join(sentences)


def _number(rng: random.Random) -> str:
    return rng.choice((str(rng.randint(2, 99)), str(rng.randint(100, 99999)),
                       f"{rng.randint(0, 99)}.{rng.randint(0, 99)}",
                       f"{rng.randint(1, 9)},{rng.randint(100, 999)}"))


PUBLIC_FILLERS: dict[str, Callable[[random.Random], str]] = {
    "standard": lambda rng: f"{rng.choice(_STANDARDS)}{rng.choice(('', ' '))}"
    f"{rng.randint(8, 99999)}",
    "tool": lambda rng: f"{rng.choice(_TOOLS)} {rng.randint(1, 24)}.{rng.randint(0, 20)}"
    + rng.choice(("", f".{rng.randint(0, 12)}")),
    "model": lambda rng: rng.choice(_MODELS),
    "dataset": lambda rng: rng.choice(_DATASETS),
    "measure": lambda rng: f"{_number(rng)} {rng.choice(_UNITS)}",
    "sci": lambda rng: f"{rng.randint(1, 9)}e-{rng.randint(2, 6)}",
    "percent": lambda rng: f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%",
    "room": lambda rng: f"{rng.choice(_ROOMS)} {rng.randint(1, 40)}, "
    f"{rng.choice(_ROOMS)} {rng.choice((str(rng.randint(1, 999)), 'B', 'C2'))}",
    "coords": lambda rng: f"{rng.uniform(-80, 80):.4f}, {rng.uniform(-170, 170):.4f}",
    "ref": lambda rng: rng.choice((f"Table {rng.randint(1, 9)}", f"Figure {rng.randint(1, 12)}",
                                   f"Section {rng.randint(1, 8)}.{rng.randint(1, 5)}",
                                   f"Eq. ({rng.randint(1, 30)})", f"BIBREF{rng.randint(0, 60)}",
                                   f"[{rng.randint(1, 80)}]", f"Appendix {rng.choice('ABCD')}",
                                   f"{rng.choice(('TAB', 'FIG', 'SEC'))}REF{rng.randint(0, 20)}",
                                   f"BIBREF{rng.randint(0, 40)}, BIBREF{rng.randint(0, 40)}")),
    "row": lambda rng: " | ".join([rng.choice(_MODELS)] + [f"{rng.uniform(10, 99):.1f}"
                                                           for _ in range(rng.randint(2, 5))]),
    "heading": lambda rng: rng.choice(("Introduction", "Related Work", "Experimental Setup",
                                       "Hyperparameters", "Preprocessing", "Error Analysis",
                                       "Dataset Description", "Conclusion", "Ablation Study",
                                       "Results and Discussion", "Limitations", "Baselines")),
    "tag": lambda rng: rng.choice(("b", "i", "em", "strong", "p", "u", "span", "pre")),
    "math": lambda rng: rng.choice(("$\\langle f_1, \\ldots , f_n \\rangle$",
                                    "$\\mathbf{W}^{(l)} h_{t-1}$", "$s^{\\prime }_2$",
                                    "$\\sum _{i=1}^{N} \\log p(y_i|x_i)$",
                                    "$A(s) \\in \\mathbb{R}^{d}$", "$\\hat{y} = f(x)$")),
    "symbol": lambda rng: rng.choice(("$x_i$", "$h_t$", "w_{t-1}", "$\\alpha$", "$k=5$",
                                      "$O(n^2)$", "$p < 0.05$", "$\\lambda = 0.1$", "$d=768$")),
    "money": lambda rng: rng.choice(("$", "€", "£", "¥", "CHF ")) + f"{rng.randint(1, 9999)}."
    f"{rng.randint(0, 99):02d}",
    "order": lambda rng: rng.choice(("order", "build", "job", "run", "PR", "issue", "invoice",
                                     "batch", "release")) + f" #{rng.randint(10, 999999)}",
    "port": lambda rng: f"port {rng.choice((22, 80, 443, 5432, 6379, 8080, 9090, 3000))}",
    "year": lambda rng: str(rng.randint(1850, 2030)),
    "place": lambda rng: rng.choice(_PLACES),
    "semver": lambda rng: f"v{rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
    + rng.choice(("", "-rc1", "-beta.2", "+build.7")),
}

_SALAD_PIECES = ("standard", "tool", "model", "dataset", "measure", "sci", "percent", "room",
                 "coords", "ref", "money", "order", "port", "year", "place", "semver", "symbol")
PUBLIC_FILLERS["salad"] = _salad

# Whole PII-free texts; fields are `{_name}` fillers of `examples` or of PUBLIC_FILLERS.
PUBLIC_NEGATIVES: dict[str, tuple[str, ...]] = {
    "paper": (
        "We fine-tune {_model} on {_dataset} for {_num} epochs with a learning rate of {_sci} "
        "({_ref}). Accuracy improves by {_percent} over the baseline of {_ref}.",
        "As shown in {_ref}, the gap narrows to {_percent} when the context exceeds {_measure}; "
        "we attribute this to the attention pattern described in {_ref}.",
        "Our implementation uses {_tool} and runs on {_num} GPUs; training takes {_measure} "
        "per epoch. Results are averaged over {_num} seeds ({_ref}).",
        "Following {_ref} and {_ref}, we report F1 and exact match on the dev split of "
        "{_dataset}, where {_model} reaches {_percent}.",
        "The corpus was collected between {_year} and {_year} in {_place} and contains "
        "{_measure}; annotators agreed on {_percent} of the items ({_ref}).",
        "Model | P | R | F1\n{_row}\n{_row}\n{_row}\nTable {_num}: Results on {_dataset}.",
        "Let {_symbol} denote the hidden state at step t; we set {_symbol} and {_symbol} as in "
        "{_ref}. The loss converges after {_measure} ({_ref}).",
        "Introduction\nNeural models for {_dataset} have improved rapidly {_ref}. Code is at "
        "https://github.com/{_word}-lab/{_word} under the {_standard} licence.",
        "{_heading}\nWe compare three settings: (1) word-only, (2) char-only and (3) both. "
        "Given {_math}, the score is normalized over {_symbol}.",
        "{_heading}\n{_salad}\n\n{_heading}\nWe use {_tool} for tokenization and {_model} "
        "as the encoder ({_ref}).",
    ),
    # Screenplays and e-texts with markup: tag names and speaker cues are no values.
    "markup": (
        "<{_tag}>INT. KITCHEN - NIGHT</{_tag}>\n\nRain against the window. A kettle "
        "whistles.\n\n<{_tag}>EXT. HARBOUR - DAWN</{_tag}>",
        "<{_tag}>CHAPTER {_num}</{_tag}>\n<p>The road wound up the hill past the mill and the "
        "chapel.</p>",
        "</{_tag}><{_tag}>{_salad}</{_tag}>",
        "*** START OF THE PROJECT GUTENBERG EBOOK ***\n\nProduced by volunteers. This eBook is "
        "for the use of anyone anywhere at no cost.",
    ),
    "story": (
        "The rain kept falling over the harbour, and the old ferry left at dawn as it had every "
        "morning since {_year}. Nobody on the quay said a word.",
        "She opened the letter, read it twice, and put it back in the drawer. Outside, the "
        "carts rolled toward {_place} and the bells rang for the evening service.",
        "The soldiers marched for {_num} days through the hills. When they reached the river, "
        "the captain ordered them to make camp and wait for the supply wagons.",
        "It was the winter of {_year}. The village had no doctor, the school had one teacher, "
        "and the road to {_place} was closed until spring.",
        "CHAPTER {_num}.\n\n\"Come in,\" said the voice behind the door. \"The master is "
        "away, and the house is cold.\"",
        "The ship carried {_num} passengers and a cargo of wool. On the third night a storm "
        "broke the mast, and the crew sang to keep their courage.",
    ),
    "numbers": (
        "{_salad}", "{_salad}\n\n{_salad}",
        "Upgrade to {_tool} before {_isodate}; {_standard} and {_standard} describe the change. "
        "The service listens on {_port}.",
        "Meeting moved to {_room}. Dial-in details are on the wiki, see {_order}.",
        "The sensor at {_coords} reported {_measure} at {_time}; the next reading is due in "
        "{_measure}.",
        "{_order} fixed the leak in {_semver}; memory use fell from {_measure} to {_measure}.",
        "Total: {_money} for {_num} licences, {_order}. Prices valid until {_isodate}.",
        "Deploy {_semver} to {_num} nodes in {_place}; rollback target is {_semver} "
        "({_standard}).",
        "Train {_num} leaves from {_room} at {_time} and arrives in {_place} after {_measure}.",
    ),
    # Ordinary sentences in other languages: capitalized nouns and places are no names.
    "foreign": (
        "Am Montag beginnt die Sanierung der Brücke, deshalb fährt der Bus über die Umleitung "
        "durch die Altstadt.",
        "Nach dem Essen sind wir noch lange am Ufer spazieren gegangen und haben Enten gefüttert.",
        "Od poniedziałku biblioteka będzie otwarta dłużej, a w soboty do godziny osiemnastej.",
        "Na rynku sprzedawano truskawki, ogórki i świeży chleb prosto z pieca.",
        "Cuối tuần này cả nhà về quê thăm ông bà và đi chợ phiên buổi sáng.",
        "Thư viện thành phố mở cửa đến chín giờ tối vào các ngày trong tuần.",
        "El ayuntamiento cerrará la plaza mayor durante las fiestas de septiembre.",
        "Le marché couvert ouvre à huit heures et les fromagers arrivent les premiers.",
        "La nuova linea della metropolitana collegherà la stazione centrale all'aeroporto.",
        "De bakker op de hoek verkoopt op zaterdag verse stroopwafels en appeltaart.",
        "Поезд на Казань отправляется с третьего пути, просим пассажиров пройти на посадку.",
        "Yarın sabah toplantıdan önce raporları gözden geçirmemiz gerekiyor.",
        "Ve čtvrtek bude v knihovně přednáška o historii města a jeho mostů.",
        "Nästa vecka börjar skolan igen och bussarna går enligt vintertidtabellen.",
        "Η συνάντηση μεταφέρθηκε για την Πέμπτη λόγω της απεργίας στα μέσα μεταφοράς.",
        "明日の午前中に会議室で新製品の説明会を行います。",
        "下周一开始图书馆延长开放时间，欢迎大家前来阅读。",
        "다음 주 월요일부터 도서관 운영 시간이 연장됩니다.",
        "कल सुबह बैठक से पहले सभी रिपोर्ट तैयार रखें।",
        "O mercado municipal abre às sete horas e fecha ao meio-dia aos domingos.",
    ),
}

