"""Fourth round: PII-free texts of the genres the third-round model masked most, assembled from
parts: organisations' contact blocks (names with legal forms, hotlines, register numbers,
opening hours), server logs (syslog, logfmt, Java and proxy lines with request ids, digests and
epoch timestamps), records of public columns whose codes look like personal identifiers
(stations, products, routes, courses, parts), tickets, technical documents (checksums, key
fingerprints, UUIDs, versions, configuration), school records without pupils, and prose in
Chinese, Japanese, Korean, Dutch and other languages. `PUBLIC_COMPOSERS` maps a genre to its
composer; `generate.py` adds them to the negatives.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

_BRANDS = ("Northwind", "Bluewater", "Alpine", "Riverside", "Sunrise", "Nordic", "Helix", "Vertex",
           "Orion", "Atlas", "Crescent", "Meridian", "Evergreen", "Summit", "Lumen", "Quanta",
           "Polar", "Granite", "Cobalt", "Sakura", "Lotus", "Pioneer", "Keystone", "Brightline",
           "Kestrel", "Aurora", "Silverline", "Greenfield", "Westbrook", "Redwood", "Ulmental",
           "Rheinland", "Delta", "Zuiderzee", "Hanse", "Iberia", "Adriatica", "Carpathia")
_SECTORS = ("Traders", "Energy", "Logistics", "Insurance", "Software", "Telecom", "Health",
            "Foods", "Airlines", "Water", "Energie", "Versicherungen", "Logistik", "Assurances",
            "Seguros", "Electric", "Stadtwerke", "Bouw", "Transport", "Media", "Pharma",
            "Hypotheken", "Verlag", "Immobilien", "Distribución", "Costruzioni", "Systems")
_LEGAL_FORMS = ("Ltd", "plc", "GmbH", "AG", "SA", "SAS", "B.V.", "N.V.", "S.p.A.", "S.r.l.",
                "Sp. z o.o.", "Inc.", "LLC", "Pty Ltd", "S.L.", "GmbH & Co. KG", "Oy", "a.s.")
_CJK_ORGS = ("株式会社{B}電機", "{B}物産株式会社", "{B}科技有限公司", "{B}集团股份有限公司",
             "주식회사 {B}전자", "(주){B}물산")
_CJK_BRANDS = ("サクラ", "北辰", "东方", "华信", "한빛", "대한", "青山", "星河")
_ORG_LABELS = (
    "Switchboard", "Customer service", "Customer care", "Hotline", "Helpline", "Service desk",
    "Sales", "Press office", "Support line", "Head office", "Zentrale", "Kundenservice",
    "Störungsdienst", "Service clients", "Standard", "Atención al cliente", "Centralita",
    "Centralino", "Servizio clienti", "Klantenservice", "Infolinia", "Горячая линия",
    "Central de atendimento", "Kundtjänst", "代表電話", "お客様相談室", "客服热线", "고객센터",
    "Main line", "General enquiries", "Media enquiries", "Reservations", "Box office",
)
_ADDRESS_LABELS = ("Registered office", "Head office", "Headquarters", "Hauptverwaltung",
                   "Firmensitz", "Siège social", "Sede legale", "Domicilio social",
                   "Hoofdkantoor", "Bezoekadres", "Siedziba", "本社", "总部", "본사", "Visit us")
_REGISTERS = ("Company no. {D8}", "Registered in England and Wales No. {D8}", "VAT GB {D3} {D4} "
              "{D2}", "USt-IdNr. DE{D9}", "Amtsgericht {T} HRB {D5}", "RCS {T} {D3} {D3} {D3}",
              "SIRET {D3} {D3} {D3} {D5}", "KvK {D8}", "BTW NL{D9}B01", "P.IVA IT{D11}",
              "CIF B{D8}", "ABN {D2} {D3} {D3} {D3}", "NIP {D3}-{D3}-{D2}-{D2}",
              "EIN {D2}-{D7}", "Member FDIC", "Authorised and regulated by the FCA ({D6})")
_TOWNS = ("Bristol", "Ulm", "Paris", "Haarlem", "Leeds", "Lyon", "Graz", "Porto", "Turin",
          "Gdańsk", "Malmö", "Brno", "Bilbao", "Utrecht", "Aarhus", "Osaka", "Busan")
_HOURS = ("Mon-Fri 8am-6pm", "Monday to Friday, 9:00-17:30", "Mo-Fr 8-20 Uhr",
          "werkdagen 8.00-18.00", "du lundi au vendredi de 9h à 18h", "lun-vie 9:00-19:00",
          "24/7", "平日 9:00～17:00", "工作日 9:00-18:00", "평일 09:00~18:00")
_STREET_WORDS = ("Commercial Road", "Industriestraße", "rue de la Paix", "Market Street",
                 "Via Roma", "Calle Mayor", "Keizersgracht", "ul. Przemysłowa", "Business Park",
                 "Technologiepark", "Avenue des Champs-Élysées", "Königsallee", "High Street")


def _digits(text: str, rng: random.Random) -> str:
    for width in (11, 9, 8, 7, 6, 5, 4, 3, 2):
        while "{D%d}" % width in text:
            text = text.replace("{D%d}" % width, "".join(rng.choices(string.digits, k=width)), 1)
    return text.replace("{T}", rng.choice(_TOWNS))


def organisation(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return rng.choice(_CJK_ORGS).replace("{B}", rng.choice(_CJK_BRANDS))
    name = f"{rng.choice(_BRANDS)} {rng.choice(_SECTORS)}"
    return name if rng.random() < 0.15 else f"{name} {rng.choice(_LEGAL_FORMS)}"


def service_number(rng: random.Random) -> str:
    shapes = ("0800 {D3} {D4}", "0808 {D3} {D4}", "1-800-{D3}-{D4}", "1 (888) {D3}-{D4}",
              "0800 {D4} {D3}", "0120-{D3}-{D3}", "800 {D3} {D3}", "0844 {D3} {D4}",
              "+49 {D3} {D3}-0", "+44 {D2} {D4} {D4}", "0{D2} {D3} {D3} 0",
              "+33 1 {D2} {D2} {D2} 00",
              "400-{D3}-{D4}", "1588-{D4}", "+31 {D2} {D3} 0000", "0{D3} {D3} {D2} 00")
    return _digits(rng.choice(shapes), rng)


def org_address(rng: random.Random) -> str:
    street = f"{rng.randint(1, 400)} {rng.choice(_STREET_WORDS)}"
    if rng.random() < 0.5:
        street = f"{rng.choice(_STREET_WORDS)} {rng.randint(1, 400)}"
    return f"{street}, {rng.randint(1000, 99999)} {rng.choice(_TOWNS)}"


def public_org_block(rng: random.Random) -> str:
    """An imprint, a footer or a signature of an organisation: no person in it."""
    lines = [organisation(rng)]
    if rng.random() < 0.4:
        lines.insert(0, rng.choice(("Customer Support", "The Billing Team", "Ihr Kundenservice",
                                    "Klantenservice", "Service clients", "Atención al Cliente",
                                    "IT Service Desk", "Customer Care Team", "카스타머 센터",
                                    "Press Office", "The Admissions Office")))
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.4:
            lines.append(f"{rng.choice(_ORG_LABELS)}{rng.choice((': ', ' ', ' · ', ' - '))}"
                         f"{service_number(rng)}" + (f" ({rng.choice(_HOURS)})"
                                                     if rng.random() < 0.4 else ""))
        elif roll < 0.6:
            lines.append(f"{rng.choice(_ADDRESS_LABELS)}: {org_address(rng)}")
        elif roll < 0.85:
            lines.append(_digits(rng.choice(_REGISTERS), rng))
        else:
            lines.append(rng.choice(("www.{_word}.example", "info@{_word}.example",
                                     "Opening hours: " + rng.choice(_HOURS),
                                     "Follow us on LinkedIn", "Registered charity no. {_num}")))
    separator = rng.choice(("\n", "\n", " · ", " | "))
    block = separator.join(lines)
    if rng.random() < 0.5:
        block = rng.choice((
            "Thank you for contacting us. Your case number is {_num}.",
            "Your order has shipped and should arrive within {_num} days.",
            "Vielen Dank für Ihre Nachricht. Wir melden uns in Kürze.",
            "Nous avons bien reçu votre demande.", "Hemos recibido su solicitud.",
            "Bedankt voor uw bericht. Wij nemen zo snel mogelijk contact op.",
            "お問い合わせありがとうございます。", "感谢您的来信，我们会尽快回复。",
            "문의해 주셔서 감사합니다.",
        )) + "\n\n" + rng.choice(("Kind regards,", "Mit freundlichen Grüßen", "Cordialement,",
                                  "Met vriendelijke groet,", "Saludos,", "")) + "\n" + block
    return block


def public_server_log(rng: random.Random) -> str:
    host = f"{rng.choice(('web', 'api', 'db', 'worker', 'edge', 'node'))}-{rng.randint(1, 40):02d}"
    epoch = str(rng.randint(1_600_000_000, 1_800_000_000))
    hexid = "".join(rng.choices("0123456789abcdef", k=rng.choice((8, 12, 16, 32))))
    ulid = "01" + "".join(rng.choices("0123456789ABCDEFGHJKMNPQRSTVWXYZ", k=24))
    month = rng.choice(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct"))
    stamp = rng.choice((f"{month} {rng.randint(1, 28):2d} {{_time}}:{rng.randint(10, 59)} {host} ",
                        "{_isodate}T{_time}:12.044Z ", "{_isodate} {_time}:05,221 ",
                        f"ts={epoch}{rng.randint(100, 999)} ", "[{_isodate} {_time}:44] ",
                        f"{rng.randint(2020, 2029)}/{rng.randint(1, 12):02d}/"
                        f"{rng.randint(1, 28):02d} {{_time}}:08 "))
    lines = (
        "systemd[1]: Started Session {_num} of user root.",
        "systemd[1]: apt-daily-upgrade.service: Deactivated successfully.",
        "kernel: [{_num}.{_num}] EXT4-fs (sda1): re-mounted. Opts: errors=remount-ro",
        "CRON[{_num}]: (root) CMD (/usr/local/bin/backup.sh)",
        f"level=info caller=compact.go:{{_num}} component=tsdb msg=\"write block\" ulid={ulid} "
        f"mint={epoch}000 duration={{_num}}ms",
        f"level=warn msg=\"scrape timeout\" target=http://{host}.internal:9100/metrics "
        f"trace_id={hexid}",
        "INFO  [http-nio-8080-exec-{_num}] o.a.c.c.StandardWrapper - Servlet initialised in "
        "{_num} ms",
        "WARN  [pool-{_num}-thread-1] c.z.h.p.HikariPool - Thread starvation detected",
        f"ERROR [scheduler-2] i.e.b.Reconciler - batch {hexid[:8]} failed: connection reset "
        "(attempt 3/5)",
        f"request_id={{_uuid}} span_id={hexid[:16]} status=200 bytes={{_num}} "
        f"elapsed_ms={{_num}}",
        "nginx[{_num}]: [warn] {_num}#{_num}: *{_num} an upstream response is buffered",
        f"docker: pulled image sha256:{hexid}{hexid} ({{_num}} MB)",
        "postgres[{_num}]: LOG: checkpoint complete: wrote {_num} buffers ({_percent})",
        "haproxy[{_num}]: backend app/srv{_num} is UP, reason: Layer7 check passed",
        "sshd[{_num}]: Server listening on 0.0.0.0 port {_port}.",
        f"job={{_word}} run={ulid} exit=0 took={{_num}}s",
        "java.lang.IllegalStateException: pool closed\n\tat com.example.db.Pool.get("
        "Pool.java:{_num})",
        f"etag=\"{hexid}\" cache=HIT age={{_num}}",
    )
    return "\n".join(stamp + rng.choice(lines) for _ in range(rng.randint(2, 6)))


def _code(rng: random.Random) -> str:
    prefix = "".join(rng.choices(string.ascii_uppercase, k=rng.choice((1, 2, 3, 4))))
    digits = "".join(rng.choices(string.digits, k=rng.randint(2, 6)))
    return prefix + rng.choice(("-", "", "", "/", ".")) + digits


_PUBLIC_TABLES = (
    (("station_id", "code"), ("station_name", ("Harbour Point", "Castle Hill", "Riverside Park",
      "Old Mill", "Central", "North Gate")), ("lat", "lat"), ("lon", "lon"), ("opened", "year")),
    (("sku", "code"), ("product", ("Cordless drill 18V", "Garden hose 25 m", "LED bulb E27",
      "Office chair", "USB-C cable 2 m")), ("unit_price", "money"), ("stock", "num"),
     ("warehouse", "town")),
    (("route", "code"),
     ("operator", ("Metro Transit", "City Buses", "RegioRail", "Harbour Ferries")),
     ("stops", "num"), ("first_departure", "time"), ("depot", ("Northgate", "Airport", "Central"))),
    (("course_code", "code"), ("title", ("Linear Algebra", "Organic Chemistry", "World History",
      "Data Structures", "Macroeconomics")), ("credits", "small"), ("room", "room"),
     ("term", ("Autumn", "Spring", "Summer"))),
    (("part_no", "code"), ("description", ("hex bolt M8", "bearing 6204", "gasket", "o-ring")),
     ("supplier", "org"), ("unit_cost", "money"), ("lead_time_days", "small")),
    (("flight", "code"), ("origin", "town"), ("destination", "town"), ("gate", "gate"),
     ("status", ("On time", "Delayed", "Boarding", "Cancelled"))),
    (("server", "host"), ("region", ("eu-west-1", "us-east-2", "ap-south-1")), ("vcpus", "small"),
     ("ram_gb", "small"), ("os", ("Ubuntu 22.04", "Debian 12", "RHEL 9.3"))),
    (("isbn", "isbn"), ("title", ("The Silent Sea", "Patterns of Trade", "A Short History")),
     ("publisher", "org"), ("year", "year"), ("pages", "num")),
    (("ticket_id", "code"), ("category", ("network", "billing", "hardware", "access")),
     ("priority", ("P1", "P2", "P3")), ("opened", "date"), ("team", ("Network Operations",
      "Service Desk", "Platform", "Facilities"))),
)


def _cell(kind: object, rng: random.Random) -> str:
    if isinstance(kind, tuple):
        return rng.choice(kind)
    makers: dict[str, Callable[[], str]] = {
        "code": lambda: _code(rng), "lat": lambda: f"{rng.uniform(-60, 60):.4f}",
        "lon": lambda: f"{rng.uniform(-150, 150):.4f}",
        "year": lambda: str(rng.randint(1950, 2026)),
        "money": lambda: f"{rng.randint(1, 900)}.{rng.randint(0, 99):02d}",
        "num": lambda: str(rng.randint(0, 5000)), "small": lambda: str(rng.randint(1, 64)),
        "town": lambda: rng.choice(_TOWNS), "time": lambda: f"{rng.randint(5, 23):02d}:"
        f"{rng.randint(0, 59):02d}", "room": lambda: f"{rng.choice('ABC')}{rng.randint(1, 40)}",
        "org": lambda: organisation(rng),
        "gate": lambda: f"{rng.choice('ABCD')}{rng.randint(1, 60)}",
        "host": lambda: f"srv-{rng.randint(1, 99):02d}.{rng.choice(('eu', 'us'))}.internal",
        "isbn": lambda: f"978-{rng.randint(0, 9)}-{rng.randint(100, 999)}-"
        f"{rng.randint(10000, 99999)}-{rng.randint(0, 9)}",
        "date": lambda: f"20{rng.randint(15, 29)}-{rng.randint(1, 12):02d}-"
        f"{rng.randint(1, 28):02d}",
    }
    return makers[str(kind)]()


def public_record(rng: random.Random) -> str:
    columns = rng.choice(_PUBLIC_TABLES)
    rows = [[_cell(kind, rng) for _, kind in columns] for _ in range(rng.randint(1, 4))]
    names = [name for name, _ in columns]
    layout = rng.choice(("csv", "csv", "json", "yaml", "markdown"))
    if layout == "json":
        items = [", ".join(f'"{k}": "{v}"' for k, v in zip(names, row, strict=True))
                 for row in rows]
        return "[" + ", ".join("{" + item + "}" for item in items) + "]"
    if layout == "yaml":
        return "\n".join("- " + "\n  ".join(f"{k}: {v}" for k, v in zip(names, row, strict=True))
                         for row in rows)
    separator = " | " if layout == "markdown" else rng.choice((",", ";", "\t", "|"))
    return "\n".join(separator.join(cells) for cells in [names] + rows)


def public_ticket(rng: random.Random) -> str:
    number = rng.choice(("INC{D7}", "#{D4}", "PROJ-{D4}", "CHG{D7}", "SR-{D6}", "RITM{D7}"))
    lines = [
        f"Ticket {_digits(number, rng)} · Priority {rng.choice(('P1', 'P2', 'P3', 'low', 'high'))}"
        f" · Assigned group: {rng.choice(('Network Operations', 'Service Desk', 'Platform Team', 'Facilities', 'Database Admins'))}",  # noqa: E501
        rng.choice(("Summary: VPN gateway drops tunnels after firmware {_version}",
                    "Summary: printer on floor {_num} jams on duplex jobs",
                    "Build fails on macOS 14 with Xcode 15.3",
                    "Summary: certificate for api.example.com expires on {_isodate}",
                    "Zusammenfassung: Drucker im {_num}. OG druckt nicht",
                    "Resumen: el servidor de correo rechaza adjuntos de más de 25 MB")),
        rng.choice(("Related: " + _digits("CHG{D7}, KB{D7}", rng),
                    "Labels: bug, ci · Milestone: v{_version}",
                    "Commit " + "".join(rng.choices("0123456789abcdef", k=7)) + " introduced it.",
                    "Steps: upgraded both nodes on {_isodate}, rollback planned for Sat 02:00 UTC",
                    "Affected CI: " + _code(rng) + ", " + _code(rng), "Status: resolved")),
    ]
    return "\n".join(lines[:rng.randint(2, 3)])


def public_tech_doc(rng: random.Random) -> str:
    hex64 = "".join(rng.choices("0123456789abcdef", k=64))
    hex40 = hex64[:40]
    fingerprint = " ".join("".join(rng.choices("0123456789ABCDEF", k=4)) for _ in range(10))
    pieces = (
        f"Verify the download:\n\n    sha256sum pkg-{{_semver}}.tar.gz\n    {hex64}  "
        f"pkg-{{_semver}}.tar.gz",
        f"SHA256 ({{_word}}-{{_semver}}.zip) = {hex64}", f"Checksum: {hex64}",
        f"The signing key fingerprint is {fingerprint}.",
        f"Objects are addressed by content hash, e.g. `sha1:{hex40}`.",
        "Each request carries an `X-Request-Id` header (a UUID such as `{_uuid}`).",
        "Set `max_connections = {_num}` and restart; the default port is {_port}.",
        "Tested on Ubuntu 22.04 LTS (kernel 6.5.0-26-generic) with Python {_semver}.",
        f"image: registry.example.com/app@sha256:{hex64}",
        "Supported since release {_semver} ({_isodate}); deprecated in {_version}.",
        f"integrity=\"sha384-{''.join(rng.choices(string.ascii_letters + string.digits, k=64))}\"",
        "Resource `{_uuid}` is public and read-only.", "Color tokens: #1E88E5, #FFC107.",
        f"commit {hex40}\nMerge: {hex40[:7]} {hex64[40:47]}\nDate: {{_isodate}}",
        "Die Konfiguration liegt unter /etc/{_word}/config.yaml (Version {_semver}).",
        "設定ファイルは /etc/{_word}.conf にあります（バージョン {_semver}）。",
        "配置文件位于 /etc/{_word}.conf，默认端口为 {_port}。",
        "설정 파일은 /etc/{_word}.conf 에 있으며 기본 포트는 {_port} 입니다.",
    )
    return "\n".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))


def public_school(rng: random.Random) -> str:
    year = rng.choice(("Year 9", "Grade 10", "Klasse 8b", "groep 7", "3e année", "2年B組",
                       "高二(3)班", "2학년 3반"))
    lines = [f"Timetable, {year}, {rng.choice(('autumn term', 'spring term', 'Halbjahr 2'))}"]
    subjects = ("Mathematics", "Geography", "Chemistry lab", "PE", "History", "Biology",
                "Deutsch", "Aardrijkskunde", "数学", "국어", "Art", "Music")
    for _ in range(rng.randint(2, 5)):
        lines.append(f"{rng.choice(('Mon', 'Tue', 'Wed', 'Thu', 'Fri'))} {{_time}} "
                     f"{rng.choice(subjects)} (Room {rng.choice('ABCS')}{rng.randint(1, 30)})")
    if rng.random() < 0.5:
        lines.append(f"{rng.randint(40, 300)} students sat the exam; mean score "
                     f"{rng.randint(50, 90)}.{rng.randint(0, 9)}, pass rate "
                     f"{rng.randint(60, 99)}%.")
    if rng.random() < 0.5:
        lines.append(f"Course codes: {_code(rng)}, {_code(rng)}. Term ends {{_isodate}}.")
    return "\n".join(lines)


_PROSE = {
    "zh": ("上海图书馆东馆将于下周一起延长开放时间。", "今年夏天的音乐节将在市中心的公园举行。",
           "这座桥建于一九三七年，是城市的标志之一。", "新的地铁线路预计明年年底通车。",
           "研究表明，适量运动有助于改善睡眠质量。", "博物馆周一闭馆，其他时间免费开放。",
           "春节期间，火车站的客流量比平时增加了三成。", "这家餐厅以传统的四川菜闻名。"),
    "ja": ("今年の桜は例年より一週間ほど早く咲き始めた。", "新しい図書館は駅から徒歩五分の場所にある。",  # noqa: E501 (CJK text)
           "台風の影響で、午後の便はすべて欠航となった。", "この寺は八世紀に建てられたと伝えられている。",  # noqa: E501 (CJK text)
           "市場では朝早くから新鮮な魚が売られている。", "来月から市内バスの運賃が改定される。"),
    "ko": ("서울시는 다음 달부터 한강 공원의 야간 조명을 새로 설치할 계획이다.",
           "올해 여름은 예년보다 비가 많이 내렸다.", "새로 문을 연 박물관에는 주말마다 관람객이 몰린다.",  # noqa: E501 (CJK text)
           "이 다리는 1970년대에 지어졌으며 내년에 보수 공사를 시작한다.",
           "연구진은 새로운 배터리 소재를 개발했다고 밝혔다.", "시장 골목에는 오래된 국숫집이 많다."),  # noqa: E501 (CJK text)
    "nl": ("Het museum aan de gracht is vanaf volgende maand weer open.",
           "De gemeenteraad besloot de brug over het kanaal in 2027 te vervangen.",
           "In het voorjaar bloeien de tulpen langs de dijk.",
           "De trein naar Utrecht vertrekt vandaag van spoor vijf.",
           "Onderzoekers van de universiteit publiceerden een nieuw rapport over waterbeheer.",
           "Met een nieuwe fietsroute wordt het centrum beter bereikbaar.",
           "Het weekend wordt zonnig met een kans op een bui in het oosten."),
    "de": ("Die Ausstellung im Stadtmuseum ist bis Ende März verlängert worden.",
           "Wegen Bauarbeiten fährt die Linie 4 am Wochenende nur bis zum Hauptbahnhof."),
    "fr": ("La médiathèque du quartier rouvrira ses portes après six mois de travaux.",
           "Le festival de jazz attire chaque été des milliers de visiteurs."),
    "es": ("La nueva línea de metro unirá el aeropuerto con el centro en veinte minutos.",
           "El mercado central celebra este año su centenario."),
    "pl": ("Latem w Krakowie odbył się festiwal muzyki dawnej.",
           "Nowy most na Wiśle zostanie otwarty jesienią."),
    "pt": ("A biblioteca municipal vai alargar o horário durante os exames.",),
    "it": ("Il nuovo parco sul lungofiume sarà inaugurato a maggio.",),
    "ru": ("Новая станция метро откроется в конце следующего года.",),
    "tr": ("Şehrin tarihi çarşısı restorasyondan sonra yeniden açıldı.",),
    "vi": ("Thư viện thành phố sẽ mở cửa đến chín giờ tối vào cuối tuần.",),
}


def public_prose(rng: random.Random) -> str:
    weights = {"zh": 3, "ja": 2, "ko": 3, "nl": 3}
    languages = tuple(_PROSE)
    language = rng.choices(languages, weights=[weights.get(k, 1) for k in languages])[0]
    sentences = [rng.choice(_PROSE[language]) for _ in range(rng.randint(1, 3))]
    joiner = "" if language in ("zh", "ja") else " "
    text = joiner.join(dict.fromkeys(sentences))
    return text + (" {_localtext}" if rng.random() < 0.2 else "")


PUBLIC_COMPOSERS: dict[str, Callable[[random.Random], str]] = {
    "org": public_org_block, "server_log": public_server_log, "public_record": public_record,
    "ticket": public_ticket, "tech_doc": public_tech_doc, "school": public_school,
    "local_prose": public_prose,
}
