"""Third round: PII-free texts of the genres `compose.py` writes, assembled from parts the same
way, so that what separates them from positives is the values, not the template.

They hold what the earlier models read as private: numbers and versions, public UUIDs, ISO and
spelled dates of events (not of birth), coordinates, building and floor numbers, part and order
numbers, landmarks, authors cited in papers, words that are also given names, code, logs without
personal data, and prose in many languages. `NEGATIVE_COMPOSERS` maps a genre to a composer.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable

from cacheprune.detectors.train.compose_parts import (
    ADDRESS_CUES,
    CHAT_NEUTRAL,
    CLOSINGS,
    NAME_FRAMES,
    NEUTRAL_SENTENCES,
    NOT_NAMES,
    STAMPS,
)
from cacheprune.detectors.train.value_shapes import MORE_DOB_FORMS

_TEAMS = ("The Support Team", "IT Operations", "Customer Care", "HR", "The {_org} team",
          "Facilities", "Release Engineering", "Your bank", "Das Service-Team", "L'équipe support",
          "El equipo de soporte", "Zespół obsługi klienta", "Служба поддержки", "运维团队")
_EVENT_FRAMES = (
    "The conference runs on %E% in {_place}.", "Released on %E%.", "Deadline: %E%",
    "Last updated %E%", "The store reopens on %E%.", "Invoice dated %E%, due in 30 days.",
    "On %E% the bridge was closed for repairs.", "Published %E% · {_num} min read",
    "The treaty was signed on %E%.", "Maintenance window: %E%, {_time}-{_time} UTC",
    "Early-bird tickets until %E%.", "Effective %E%, the fee is {_money}.", "Since %E% ...",
)
_PUBLIC_THINGS = (
    "48.8584° N, 2.2945° E", "lat {_coords}", "Building {_num}, Floor {_num}", "Room {_num}",
    "Gate B{_num}", "Level {_num}, Bay {_num}", "Platform {_num}", "330 m tall",
    "part no. {_num}-{_hex}", "SKU {_hex}", "model no. X{_num}", "order #{_num}",
    "the Eiffel Tower", "Victoria Falls", "Lake Como", "Mount Fuji", "the Golden Gate Bridge",
    "Central Park", "the Louvre", "Table Mountain", "the Brandenburg Gate", "Angkor Wat",
    "Highway {_num}", "Route {_num}", "Terminal {_num}", "Pier {_num}", "Exit {_num}",
)
# Words that are also given names, in their ordinary sense.
_NAME_LIKE = (
    "We have faith in the new process.", "The grant was approved last week.",
    "We hope to ship on time.", "The bill is due on the 1st.", "Will it scale?",
    "Mark the box as done.", "The rose garden opens in May.", "Summer sales start soon.",
    "Grace period ends at midnight.", "Jack up the car before changing the tyre.",
    "The pat on the back helped.", "Sky is clear today.", "The ruby ring is on sale.",
    "Joy is the theme of the show.", "Rob the bank? no, only in the game.", "Frank feedback helps.",
    "Patience is required.", "Dawn comes early in June.", "Iris scans open the door.",
    "Chase the ticket with facilities.", "Sterling fell against the dollar.",
)
_CITATIONS = (
    "as in (Vaswani et al., 2017)", "following Devlin et al. (2019)", "see Kingma and Ba (2015)",
    "cf. Mikolov et al. [12]", "(Hochreiter & Schmidhuber, 1997)", "Peters et al. BIBREF3 show",
    "Radford et al. (2019) argue", "the method of Lample et al. BIBREF14",
)
_CODE = (
    "def load(path: str) -> dict:\n    with open(path) as f:\n        return json.load(f)",
    "SELECT id, created_at, total FROM orders WHERE status = 'paid' ORDER BY created_at DESC;",
    "for (let i = 0; i < items.length; i++) {\n  console.log(items[i].name);\n}",
    "FROM python:3.12-slim\nRUN pip install requests==2.31.0\nCOPY . /app\nEXPOSE 8080",
    "services:\n  db:\n    image: postgres:16\n    ports: [\"5432:5432\"]",
    "class OrderService:\n    def __init__(self, repo):\n        self.repo = repo",
    "git checkout -b fix/timeout && git commit -m 'raise timeout to 30s'",
    "kubectl rollout restart deployment/api -n prod", "npm install react@18.2.0 --save",
    "export PATH=$HOME/.local/bin:$PATH", "curl -s https://api.example.com/v2/items/{_uuid}",
    "ERROR in ./src/App.tsx 12:4 Module not found: 'lodash'",
    "import numpy as np\nx = np.zeros((3, 4))",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
)
_FOREIGN = (
    "Im Mai letzten Jahres wurde die Brücke über den Fluss für den Verkehr freigegeben.",
    "Der Bürgermeister eröffnete am Samstag das neue Hallenbad in der Innenstadt.",
    "Die Ergebnisse der Umfrage werden im Juni veröffentlicht.",
    "Wegen der Bauarbeiten fällt die Straßenbahn bis Ende August aus.",
    "W czerwcu odbędzie się festiwal muzyki na Starym Mieście.",
    "Wczoraj w nocy padał deszcz, a rano drogi były śliskie.",
    "Nowa linia tramwajowa połączy dworzec z lotniskiem do końca roku.",
    "Năm ngoái thành phố đã xây thêm ba cây cầu mới qua sông.",
    "Buổi hòa nhạc sẽ diễn ra vào tối thứ Bảy tại nhà hát lớn.",
    "Giá rau ở chợ tăng mạnh sau đợt mưa bão tuần trước.",
    "Le musée sera fermé le lundi pendant tout le mois de juillet.",
    "La biblioteca amplía su horario durante la época de exámenes.",
    "Il treno per Milano partirà dal binario sette con venti minuti di ritardo.",
    "De gemeente plant nieuwe fietspaden langs het kanaal.",
    "В субботу в парке пройдёт ярмарка местных фермеров.",
    "Příští týden začíná rekonstrukce hlavního náměstí.",
    "Nästa månad öppnar det nya biblioteket vid torget.",
    "Yeni metro hattı önümüzdeki yıl hizmete girecek.",
    "A feira do livro começa na próxima semana no parque da cidade.",
    "Η έκθεση θα μείνει ανοιχτή μέχρι το τέλος Σεπτεμβρίου.",
    "Jövő héten kezdődik a híd felújítása a belvárosban.",
    "Seuraavalla viikolla kirjasto on suljettu remontin vuoksi.",
    "Toamna aceasta se deschide o nouă școală în cartier.",
    "来月から駅前の図書館が改装のため休館します。",
    "今年夏天的音乐节将在市中心的公园举行。",
    "다음 달부터 시내버스 노선이 일부 변경됩니다.",
    "अगले महीने शहर में नया पुस्तकालय खुलेगा।",
    "Bulan depan pasar malam akan dibuka di dekat stasiun.",
    "ในเดือนหน้าห้องสมุดจะปิดปรับปรุงสองสัปดาห์",
    "בחודש הבא תיפתח ספרייה חדשה במרכז העיר.",
    "سيتم افتتاح المكتبة الجديدة في الشهر القادم.",
)


def _event_date(rng: random.Random) -> str:
    day = datetime.date(rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28))
    form = rng.choice(("iso", "ordinal", "short", "native", "cjk", "numeric", "plain"))
    if form == "iso":
        return day.isoformat()
    if form == "plain":
        return day.strftime(rng.choice(("%d %B %Y", "%B %d, %Y", "%d %b", "%-d %B")))
    return MORE_DOB_FORMS[form](day, rng)


def _fill(text: str, rng: random.Random) -> str:
    return text.replace("%E%", _event_date(rng))


def negative_email(rng: random.Random) -> str:
    body = [rng.choice(NEUTRAL_SENTENCES + _NAME_LIKE) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.5:
        body.append(_fill(rng.choice(_EVENT_FRAMES), rng))
    if rng.random() < 0.3:
        body.append("Meet at " + rng.choice(_PUBLIC_THINGS) + ".")
    greeting = rng.choice(("Hi all,", "Hello team,", "Dear customer,", "Hi,", "Hallo zusammen,",
                           "Bonjour à tous,", "Hola a todos,", ""))
    return f"{greeting}\n\n{' '.join(body)}\n\n{rng.choice(CLOSINGS)}\n{rng.choice(_TEAMS)}"


def negative_chat(rng: random.Random) -> str:
    speakers = ("me", "you", "bot", "system", "Support", "Agent", "team")
    prefix = rng.choice(("%S%: ", "[{_time}] %S%: ", "<%S%> ", "", "- "))
    lines = []
    for _ in range(rng.randint(2, 6)):
        line = rng.choice(CHAT_NEUTRAL + _NAME_LIKE + _PUBLIC_THINGS)
        lines.append(prefix.replace("%S%", rng.choice(speakers)) + line)
    text = "\n".join(lines)
    return text.lower() if rng.random() < 0.5 else text


def negative_log(rng: random.Random) -> str:
    lines = (
        "GET /api/v1/items/{_uuid} 200 {_num}ms", "worker-{_num} heartbeat ok", "GC pause {_num}ms",
        "INFO build {_semver} published to registry", "WARN disk usage {_percent} on /dev/sda1",
        "ERROR upstream timed out after {_num} ms (host=api-{_num}.internal)",
        "kube: pod api-{_hex} restarted (OOMKilled)", "cron: job nightly-backup finished",
        "user=root session closed", "postgres: checkpoint complete: wrote {_num} buffers",
        "request_id={_uuid} method=POST path=/v2/orders status=201", "sha256:{_hex}{_hex} pulled",
        "listening on 0.0.0.0:{_num}", "config reloaded (version {_version})",
        "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/json/decoder.py\", "
        "line {_num}, in decode", "service=billing latency_p99={_num}ms rps={_num}",
    )
    stamp = rng.choice(STAMPS)
    return "\n".join(stamp + rng.choice(lines) for _ in range(rng.randint(2, 6)))


def negative_docs(rng: random.Random) -> str:
    pieces = (
        "Resource `{_uuid}` is public.", "Created {_isodate}; updated {_isodate}.",
        "Requires {_tool} or later.", "See {_standard}.", "Returns 404 if the item does not "
        "exist.", "Example: `GET /v3/projects/{_uuid}`", "Changelog ({_isodate}): bumped to "
        "{_semver}.", "Default port is {_port}.", "The dataset was frozen on {_isodate}.",
        "Coordinates of the site: {_coords}.", "Rate limit: {_num} requests per minute.",
        "Office: " + rng.choice(_PUBLIC_THINGS) + ".", _fill(rng.choice(_EVENT_FRAMES), rng),
    )
    return " ".join(rng.choice(pieces) for _ in range(rng.randint(2, 5)))


def negative_code(rng: random.Random) -> str:
    return "\n\n".join(rng.choice(_CODE) for _ in range(rng.randint(1, 2)))


def negative_prose(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return " ".join(rng.choice(_FOREIGN) for _ in range(rng.randint(1, 3)))
    if roll < 0.75:
        return (f"{rng.choice(NEUTRAL_SENTENCES)} {rng.choice(_CITATIONS)}, "
                f"the score rises to {{_percent}} on {{_dataset}}.")
    return " ".join(rng.choice(_NAME_LIKE + _PUBLIC_THINGS) for _ in range(rng.randint(2, 4)))


def negative_record(rng: random.Random) -> str:
    columns = rng.sample((("id", "{_uuid}"), ("sku", "{_hex}"), ("qty", "{_num}"),
                          ("price", "{_money}"), ("created", "{_isodate}"), ("city", "{_place}"),
                          ("floor", "{_num}"), ("version", "{_semver}"), ("status", "{_word}"),
                          ("lat_lon", "{_coords}"), ("room", "{_room}")), rng.randint(3, 5))
    separator = rng.choice((",", ";", "|", "\t"))
    rows = [separator.join(v for _, v in columns) for _ in range(rng.randint(1, 4))]
    return "\n".join([separator.join(k for k, _ in columns)] + rows)


def negative_frames(rng: random.Random) -> str:
    """The positives' name and address frames around what is no person and no address, so
    that a frame alone ('approved by', 'with', 'ship to:') never makes a value."""
    texts = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.75:
            frame = rng.choice(NAME_FRAMES)
            while "%N%" in frame:
                frame = frame.replace("%N%", rng.choice(NOT_NAMES), 1)
        else:
            frame = rng.choice(ADDRESS_CUES).replace("%A%", rng.choice(_PUBLIC_THINGS))
        texts.append(frame)
    text = " ".join(texts)
    return text.lower() if rng.random() < 0.3 else text


NEGATIVE_COMPOSERS: dict[str, Callable[[random.Random], str]] = {
    "email": negative_email, "chat": negative_chat, "log": negative_log, "docs": negative_docs,
    "code": negative_code, "prose": negative_prose, "record": negative_record,
    "frames": negative_frames,
}
