"""What an address goes on with after the part a detector found: flats, floors, entrances and
doors in many languages ('2. Stock rechts', 'piso 9 depto "C"', 'II. em. 5.', 'İç Kapı No: 6',
'דירה 9', 'кв. 212'), and the town after a postcode that ends it ('1074 AH' -> '1074 AH
Amsterdam'). Used by whole_values.py: a flat number left public tells another tenant which door.
"""

from __future__ import annotations

import regex

# Words for a building's parts, followed (or, for floors, preceded) by a short number or letter.
_UNIT_WORDS = (
    r"apt|apartment|appt|app|flat|unit|suite|ste|floor|fl|room|rm|block|blk|bldg|building|"
    r"tower|wing|entrance|door|piso|planta|depto|dpto|departamento|puerta|pta|esc|escalera|"
    r"interior|int|andar|ap|apto|apartamento|bloco|bloque|bl|casa|lote|quadra|torre|sala|"
    r"b[aâ]timent|b[aâ]t|[ée]tage|[ée]t|porte|escalier|appartement|stock|og|eg|dg|etage|"
    r"wohnung|whg|hinterhaus|vorderhaus|seitenfl[üu]gel|t[üu]r|top|stiege|piano|interno|scala|"
    r"sc|kat|daire|blok|i[çc] kap[ıi](?: no)?|kap[ıi] no|mieszkanie|lok|lokal|em|emelet|"
    r"ajt[óo]|lph|lgh|l[äa]genhet|v[åa]n|v[åa]ning|trappa|huis|hs|bus|boîte|"
    r"кв|квартира|подъезд|этаж|корп|корпус|стр|строение|офис|"
    r"דירה|קומה|כניסה|شقة|الطابق|طابق|عمارة|مبنى|بناية|فيلا|"
    r"फ्लैट|मंज़िल|मंजिल|ফ্ল্যাট|তলা|বাড়ি"
)
_SIDES = r"links|rechts|mitte|left|right|izq(?:uierda)?|dcha|der(?:echa)?|esq(?:uerdo|\.)?|" \
         r"dto|dir(?:eito|\.)?|th|tv|mf|gauche|droite|sx|dx"
# A flat's or floor's number or letter: '9', '4B', 'B-402', 'C', '3hg'; not a word ('em Lisboa').
_CODE = r"(?:\p{N}[\p{N}\p{L}\-/]{0,5}|\p{L}(?:[\-/]?\p{N}{1,4})?|\p{Lu}{2})(?![\p{L}\p{N}])"
_SIDE = rf"(?i:{_SIDES})(?![\p{{L}}])"
# Parts of a house named without a number ('Hinterhaus', 'rez-de-chaussée', 'bajo').
_WHOLE_PARTS = r"(?i:hinterhaus|vorderhaus|seitenfl[üu]gel|gartenhaus|souterrain|dachgeschoss|" \
               r"rez-de-chauss[ée]e|rdc|bajo|entresuelo|[áa]tico|sobreloja)(?![\p{L}])"
_PIECE = (
    rf"(?i:(?:{_UNIT_WORDS})(?![\p{{L}}\p{{N}}]))\.?[ \t]*(?:[:#º°№]|n[ºo°]\.?|no\.?|nr\.?)?[ \t]*"
    rf"(?:[\"'“]?{_CODE}[\"'”]?(?:[ \t]+{_SIDE})?|{_SIDE})"
    # '3. OG links', '2. Stock', '4e étage', '3.º Esq.', 'II. em. 5.'
    rf"|(?:\p{{N}}{{1,3}}|[IVX]{{1,4}})(?:\.|º|ª|e|er|ème|th|st|nd|rd)?[ \t]*"
    rf"(?i:(?:{_UNIT_WORDS})(?![\p{{L}}\p{{N}}]))\.?(?:[ \t]+(?:\p{{N}}{{1,3}}\.?|{_SIDE}))?"
    rf"|{_WHOLE_PARTS}"
    # Danish and Norwegian floors and sides: '3. th.', '2. tv'
    rf"|\p{{N}}{{1,2}}\.[ \t]*{_SIDE}\.?"
    # A postcode and its town after a comma: ', 10439 Berlin', ', 1074 AH Amsterdam'
    rf"|(?<=,[ \t]*)(?:\p{{N}}{{5}}|\p{{N}}{{4}}[ \t]?\p{{Lu}}{{2}}|\p{{N}}{{3}}[ \t]\p{{N}}{{2}})"
    rf"[ \t]+\p{{Lu}}[\p{{L}}\p{{M}}\-]+"
)
# One more piece after a comma, a dash or a space; at most a few of them.
_TAIL = regex.compile(rf"(?:\.(?=[ \t]))?[ \t]*[,;–—-]?[ \t]*(?:{_PIECE})")
_MAX_PIECES = 4
# A postcode at the span's end ('1074 AH', '10439', 'SW1A 1AA', '01-234'), then the town.
_ENDS_IN_POSTCODE = regex.compile(
    r"(?:(?<![\p{L}\p{N}])(?:\p{N}{4}[ \t]?\p{Lu}{2}|\p{N}{3}[ \t\-]?\p{N}{2,3}|\p{N}{4,6}|"
    r"\p{Lu}{1,2}\p{N}[\p{Lu}\p{N}]?[ \t]\p{N}\p{Lu}{2}))\Z"
)
_TOWN = regex.compile(r"[ \t]+\p{Lu}[\p{L}\p{M}'’\-]+"
                      r"(?:[ \t]+(?:\p{Lu}[\p{L}\p{M}'’\-]*|\p{N}{1,2}))?(?![\p{L}\p{N}])")


def address_end(text: str, end: int) -> int:
    """Where the address that a span ends at `end` ends: its flats, floors and doors after it,
    and its town after a postcode that ends it."""
    for _ in range(_MAX_PIECES):
        piece = _TAIL.match(text, end)
        if piece is None or piece.end() == end or "\n" in piece.group():
            break
        end = piece.end()
    if _ENDS_IN_POSTCODE.search(text, max(0, end - 12), end):
        town = _TOWN.match(text, end)
        if town is not None:
            end = town.end()
    return end
