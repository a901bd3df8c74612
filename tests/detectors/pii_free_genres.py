"""PII-free texts of the genres the chain over-masked in the third round, written for the tests
of the fourth: organisations' contact blocks and public numbers, server logs, records of public
columns, tickets, technical documents with digests and versions, school records without pupils,
and prose in other languages. Nothing in them is personal data: every number, address and name
belongs to an organisation, a release, a place or a public thing, and the text says so.

They were written from the genres' descriptions, in wordings none of the generator's templates
use (`cacheprune/detectors/train`), and the model is not trained on them.
"""

from __future__ import annotations

# (genre, text)
PII_FREE_GENRES: list[tuple[str, str]] = [
    ("org_contact",
     "Questions about your order? Our customer service line is open Monday to Friday, "
     "8am-6pm: 0800 028 4471 (free from UK landlines).\n\nNorthwind Traders Ltd\n"
     "Registered office: 41 Commercial Road, Bristol BS1 6HE\nCompany no. 08812234 · "
     "VAT GB 291 4418 07"),
    ("org_contact",
     "Kontakt\nStadtwerke Ulmental GmbH\nHauptverwaltung: Industriestraße 14, 89077 Ulm\n"
     "Zentrale: +49 731 166-0\nStörungsdienst rund um die Uhr: 0800 7731 112\n"
     "Amtsgericht Ulm HRB 4417"),
    ("org_contact",
     "For press enquiries contact the Communications Office, Hallam University, "
     "Howard Street, Sheffield S1 1WB. Switchboard: +44 114 225 5555."),
    ("org_contact",
     "Service clients : 09 69 32 15 15 (appel non surtaxé), du lundi au samedi.\n"
     "Siège social : Groupe Verdane SA, 18 rue de la Paix, 75002 Paris. RCS Paris 552 081 317"),
    ("org_contact",
     "Call our toll-free hotline at 1-800-555-0199 or visit any branch. Head office: "
     "500 Market Street, San Francisco, CA 94105. Member FDIC."),
    ("org_contact",
     "Met vriendelijke groet,\n\nKlantenservice Energie Delta B.V.\nPostbus 4012, "
     "2003 EA Haarlem\nT 088 776 0000 (werkdagen 8.00-18.00)\nKvK 34112890"),
    ("org_contact",
     "株式会社サクラ電機 お客様相談室\n〒105-0011 東京都港区芝公園4丁目2番8号\n"
     "フリーダイヤル 0120-444-813（平日9時～17時）"),
    ("server_log",
     "2025-03-14T09:12:44.018Z INFO  [http-nio-8080-exec-7] o.a.c.c.StandardWrapper - "
     "Servlet dispatcher initialised in 412 ms\n"
     "2025-03-14T09:12:45.102Z WARN  [pool-3-thread-1] c.z.h.p.HikariPool - HikariPool-1 - "
     "Thread starvation or clock leap detected (housekeeper delta=61s)\n"
     "2025-03-14T09:12:47.930Z ERROR [scheduler-2] i.e.b.Reconciler - batch 7f3c2a91 failed: "
     "connection reset by peer (attempt 3/5)"),
    ("server_log",
     "Mar 14 03:00:01 web-02 systemd[1]: Starting Daily apt upgrade and clean activities...\n"
     "Mar 14 03:00:07 web-02 systemd[1]: apt-daily-upgrade.service: Deactivated successfully.\n"
     "Mar 14 03:10:22 web-02 nginx[914]: 2025/03/14 03:10:22 [warn] 914#914: *88213 an "
     "upstream response is buffered to a temporary file /var/cache/nginx/proxy_temp/4/21/"
     "0000001214"),
    ("server_log",
     "level=info ts=2025-01-08T16:40:03.551Z caller=compact.go:518 component=tsdb "
     "msg=\"write block\" mint=1736344800000 maxt=1736352000000 "
     "ulid=01JH2Q8Y3W5V0N4K7R6T9M1B2C duration=1.204s\n"
     "level=warn ts=2025-01-08T16:40:09.012Z caller=scrape.go:1341 component=\"scrape manager\""
     " target=http://10.0.3.14:9100/metrics msg=\"scrape timeout\""),
    ("csv_record",
     "station_id,station_name,lat,lon,elevation_m,opened\n"
     "STN-0042,Harbour Point,51.4416,-2.6011,12,1998-04-01\n"
     "STN-0043,Castle Hill,51.4551,-2.5862,71,2003-09-15\n"
     "STN-0051,Riverside Park,51.4477,-2.5725,9,2011-06-30"),
    ("csv_record",
     "sku;product;category;unit_price_eur;stock;warehouse\n"
     "A-10482;Cordless drill 18V;tools;89.90;214;Rotterdam\n"
     "A-10483;Spare battery 4Ah;tools;39.50;1380;Rotterdam\n"
     "B-20931;Garden hose 25 m;garden;24.99;66;Antwerpen"),
    ("json_record",
     '{"id": "c1d7a0e2-5b3f-4c8e-9a61-2f0b7d3e8c45", "type": "invoice_template", '
     '"currency": "EUR", "created_at": "2024-11-02T10:15:00Z", "version": 14, '
     '"checksum": "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", '
     '"tags": ["b2b", "quarterly"], "status": "active"}'),
    ("json_record",
     '[{"route": "M4", "operator": "Metro Transit", "stops": 23, "first_departure": "05:42",'
     ' "depot": "Northgate"}, {"route": "X12", "operator": "Metro Transit", "stops": 9, '
     '"first_departure": "06:10", "depot": "Airport"}]'),
    ("ticket",
     "Ticket INC0048213 · Priority P2 · Assigned group: Network Operations\n"
     "Summary: VPN gateway vpn-eu-1 drops tunnels every ~40 min after firmware 7.2.3\n"
     "Steps: upgraded both nodes on 2025-02-11, rollback to 7.1.9 planned for the "
     "maintenance window (Sat 02:00-04:00 UTC). Related: CHG0012077, KB0010431."),
    ("ticket",
     "Issue #5521: Build fails on macOS 14 with Xcode 15.3\n"
     "Labels: bug, ci, good first issue · Milestone: v3.8\n"
     "The linker reports `ld: warning: duplicate -rpath '@loader_path/../lib' ignored` and "
     "then exits 1. Commit 3f9e2b7 introduced the flag; reverting it fixes the build."),
    ("tech_doc",
     "Verify the download before installing:\n\n"
     "    sha256sum cacheprune-2.4.1.tar.gz\n"
     "    9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  "
     "cacheprune-2.4.1.tar.gz\n\n"
     "The signing key fingerprint is 4AEE 18F8 3AFD EB23 A3F0 7E10 F2B6 8D3A 1C4E 0C42."),
    ("tech_doc",
     "Each request carries an `X-Request-Id` header (a UUIDv7 such as "
     "`01890a5d-ac96-774b-bcce-b302099a8057`). Objects are addressed by content hash, e.g. "
     "`sha1:2aae6c35c94fcfb415dbe95f408b9ce91ee846ed`. Supported since release 1.12.0 "
     "(2023-08-21); deprecated in 3.0."),
    ("tech_doc",
     "Set `max_connections = 200` and `shared_buffers = 4GB` in postgresql.conf, then restart. "
     "The default port is 5432; the replica listens on 5433. Tested with PostgreSQL 16.2 on "
     "Ubuntu 22.04 LTS (kernel 6.5.0-26-generic)."),
    ("school_record",
     "Timetable, Year 9, autumn term\nMon 08:45 Mathematics (Room B12)\nMon 10:05 "
     "Geography (Room C3)\nTue 08:45 Chemistry lab (Science block, Lab 2)\nWed 13:30 PE "
     "(Sports hall)\nCourse codes: MATH-9A, GEOG-9, CHEM-9L. Term ends 19 December."),
    ("school_record",
     "Grade 10 results summary, 2024/25: 142 students sat the exam; mean score 71.4 "
     "(median 73), pass rate 88%. Class 10B had the highest average (76.2). Next moderation "
     "meeting: 14 March, staff room 1."),
    ("support_mail",
     "Hello,\n\nThank you for contacting Brightline Support. Your request has been logged as "
     "case 00731942 and a specialist will reply within 2 business days. Please keep the case "
     "number in the subject line.\n\nKind regards,\nBrightline Customer Support\n"
     "support.brightline.example | +1 (646) 555-0100"),
    ("support_mail",
     "Guten Tag,\n\nvielen Dank für Ihre Nachricht. Ihr Anliegen wurde unter der "
     "Vorgangsnummer 2025-118734 erfasst.\n\nMit freundlichen Grüßen\nIhr Kundenservice-Team\n"
     "Rheinland Versicherungen AG · Kundenservice · 0221 998 770"),
    ("prose",
     "Het museum aan de gracht is vanaf volgende maand weer open, met een nieuwe "
     "tentoonstelling over de scheepvaart in de zeventiende eeuw."),
    ("prose",
     "De gemeenteraad besloot dinsdagavond om de brug over het Amsterdam-Rijnkanaal in 2027 "
     "te vervangen; de kosten worden geschat op 14 miljoen euro."),
    ("prose",
     "서울시는 다음 달부터 한강 공원의 야간 조명을 새로 설치하고 자전거 도로를 넓힐 계획이다."),
    ("prose",
     "上海图书馆东馆将于下周一起延长开放时间，周末闭馆时间推迟到晚上九点。"),
    ("prose",
     "今年の桜は例年より一週間ほど早く咲き始め、公園は週末に多くの花見客でにぎわった。"),
    ("prose",
     "Latem w Krakowie odbył się festiwal muzyki dawnej, a koncerty w kościołach "
     "przyciągnęły tysiące słuchaczy."),
    ("prose",
     "La nueva línea de metro unirá el aeropuerto con el centro en veinte minutos a partir "
     "de la primavera de 2026."),
]
