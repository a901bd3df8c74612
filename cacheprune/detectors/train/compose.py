"""Third round: positive texts assembled from interchangeable parts, so that no whole template
is what the model learns.

Each composer draws greetings, bodies, closings, headers, chat lines, log lines, labels and
sentence frames (in many languages) and returns a template for `examples.render`.
`COMPOSERS` maps a genre to its composer; `compose_negatives.py` makes the PII-free twins.
None of these parts is taken from the held-out split.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from cacheprune.detectors.train.compose_parts import (
    ADDRESS_CUES,
    CHAT_NEUTRAL,
    CLOSINGS,
    DOB_CUES,
    GREETINGS,
    ID_LABELS,
    NAME_FRAMES,
    NEUTRAL_SENTENCES,
    POSTCODE_KEYS,
    REPLY_HEADERS,
    SPLIT_ADDRESS_KEYS,
    STAMPS,
    USER_LINES,
)

_NAME_FORMS = ("full", "full", "given", "given_lower", "upper", "comma", "initial", "initials",
               "airline", "particle", "nick", "lower", "family_first", "given_initial",
               "title_full", "title", "family")
_SIGNATURE_FORMS = ("full", "full", "given", "upper", "initials", "initial", "given_initial",
                    "particle", "lower", "family_first", "nick", "title_full")


def _name(rng: random.Random, forms: tuple[str, ...] = _NAME_FORMS) -> str:
    return "{PERSON:" + rng.choice(forms) + "}"


def _sentences(rng: random.Random, low: int, high: int) -> list[str]:
    return [rng.choice(NEUTRAL_SENTENCES) for _ in range(rng.randint(low, high))]


def compose_email(rng: random.Random) -> str:
    parts: list[str] = []
    if rng.random() < 0.35:
        parts.append(rng.choice(REPLY_HEADERS).replace("%N%", _name(rng, ("full", "full",
                     "comma", "upper", "particle", "airline", "family_first"))))
    if rng.random() < 0.8:
        parts.append(rng.choice(GREETINGS).replace("%N%", _name(
            rng, ("given", "given", "full", "title", "title_full", "given_lower", "nick"))))
    body = _sentences(rng, 1, 3)
    if rng.random() < 0.6:
        body.insert(rng.randrange(len(body) + 1), rng.choice(NAME_FRAMES).replace(
            "%N%", _name(rng)))
    if rng.random() < 0.3:
        body.append(rng.choice(("My new address is {ADDRESS}.", "You can reach me on {PHONE}.",
                                "my login there is {USERNAME:shaped}", "Call me: {PHONE}",
                                "I'm at {ADDRESS:lower} until friday.")))
    parts.append(" ".join(body))
    closing = rng.choice(CLOSINGS)
    signature = _name(rng, _SIGNATURE_FORMS)
    joiner = rng.choice(("\n", "\n", " ", ",\n", "\n\n"))
    tail = ""
    if rng.random() < 0.4:
        tail = rng.choice(("\n{_org}", "\n{PHONE}", "\nm: {PHONE}", "\n{_org} | {PHONE}",
                           "\nSent from my phone", "\n{EMAIL}", "\nSenior Analyst, {_org}"))
    parts.append(closing + joiner + signature + tail)
    return rng.choice(("\n\n", "\n")).join(parts)


def compose_chat(rng: random.Random) -> str:
    speakers = [rng.choice(("{USERNAME}", "{USERNAME:shaped}", "{PERSON:given}",
                            "{PERSON:given_lower}", "{PERSON:full}", "{USERNAME:handle}"))
                for _ in range(rng.randint(1, 3))]
    prefix = rng.choice(("%S%: ", "[{_time}] %S%: ", "<%S%> ", "%S% [{_time}]\n", "**%S%**: ",
                         "{_time} %S%: ", "%S% — {_time}\n", "- %S%: ", "%S% said: ", "me: "))
    lines = []
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.45:
            message = rng.choice(CHAT_NEUTRAL)
        else:
            message = rng.choice(USER_LINES["chat"] + NAME_FRAMES).replace("%N%", _name(
                rng, ("given", "given_lower", "given_lower", "full", "lower", "nick")))
        lines.append(prefix.replace("%S%", rng.choice(speakers)) + message)
    return "\n".join(lines)


def compose_log(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.35:
            lines.append(rng.choice(USER_LINES["neutral_log"]))
        else:
            lines.append(rng.choice(USER_LINES["log"]))
    stamp = rng.choice(STAMPS + ("{_time} host{_num} ",))
    return "\n".join(stamp + line for line in lines)


def compose_address(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:  # split over fields, in one of several layouts
        keys = rng.choice(SPLIT_ADDRESS_KEYS)
        variants = ("street", "city", "postcode")
        values = ["{ADDRESS:" + v + "}" for v in variants]
        pairs = [(k, v) for k, v in zip(keys, values, strict=True) if rng.random() < 0.9]
        layout = rng.choice(("json", "yaml", "csv", "form"))
        if layout == "json":
            return "{" + ", ".join(f'"{k}": "{v}"' for k, v in pairs) + "}"
        if layout == "yaml":
            return "\n".join(f"{k}: {v}" for k, v in pairs)
        if layout == "csv":
            separator = rng.choice((",", ";", "|", "\t"))
            return separator.join(k for k, _ in pairs) + "\n" + separator.join(v for _, v in pairs)
        return "\n".join(f"{k.replace('_', ' ').title()}: {v}" for k, v in pairs)
    if roll < 0.45:  # a postcode alone after its label
        key = rng.choice(POSTCODE_KEYS)
        return f"{key}{rng.choice((': ', ' ', ' - ', '='))}{{ADDRESS:postcode}}"
    variant = rng.choice(("", "", "lower", "lower", "upper", "lines", "flat", "spoken", "street",
                          "sector"))
    return rng.choice(ADDRESS_CUES).replace("%A%", "{ADDRESS" + (":" + variant if variant else "")
                                            + "}")


def compose_dob(rng: random.Random) -> str:
    variant = rng.choice(("many", "many", "native", "native", "words", "cjk", "ordinal", "short",
                          "numeric", "iso", "dmy", "mdy", "abbrev", "long", "two_digit", "dots"))
    cue = rng.choice(DOB_CUES).replace("%D%", "{DATE_OF_BIRTH:" + variant + "}")
    if "%N%" in cue:
        cue = cue.replace("%N%", _name(rng))
    return cue


def compose_ids(rng: random.Random) -> str:
    kind = rng.choice(tuple(ID_LABELS))
    label = rng.choice(ID_LABELS[kind])
    variant = rng.choice(_ID_VARIANTS[kind])
    field = "{" + kind + (":" + variant if variant else "") + "}"
    frame = rng.choice(("%L%: %V%", "%L% %V%", "%L% #%V%", "%L% no. %V%", "my %L% is %V%",
                        "(%L% %V%)", "%L% = %V%", "%V% (%L%)", "%L%：%V%", "%L% - %V%",
                        "the %L% %V%", "%L%\t%V%", "%L% is %V%, thanks", "please quote %L% %V%",
                        "%L% [%V%]", "%L%:%V%"))
    text = frame.replace("%L%", label).replace("%V%", field)
    if rng.random() < 0.5:
        text = rng.choice(NEUTRAL_SENTENCES) + rng.choice((" ", "\n")) + text
    if rng.random() < 0.4:
        text += rng.choice((" ", "\n")) + rng.choice(NEUTRAL_SENTENCES)
    return text


_ID_VARIANTS = {
    "PERSONAL_ID": ("", "shaped", "shaped", "vin", "imei"), "MEDICAL_ID": ("", "shaped", "shaped"),
    "LICENSE_PLATE": ("", "shaped", "shaped"), "GOV_ID": ("", "passport"),
    "FINANCIAL": ("sort_code", "ifsc", "bsb", "routing", "account", "grouped", "iban", "card"),
    "USERNAME": ("", "shaped", "handle"),
}


def compose_spoken(rng: random.Random) -> str:
    agent = rng.choice(("AGENT", "Operator", "Rep", "Nurse", "Speaker 1", "Q", "Interviewer"))
    caller = rng.choice(("CALLER", "Customer", "Patient", "Speaker 2", "A", "Respondent"))
    asks = (("and your number?", "{PHONE:spoken2}"), ("what's the email?", "{EMAIL:spoken2}"),
            ("date of birth please", "{DATE_OF_BIRTH:words}"), ("and the account?",
            "{FINANCIAL:spoken}"), ("first line of the address?", "{ADDRESS:spoken}"),
            ("can I take your name?", _name(rng, ("full", "lower", "given", "comma"))),
            ("your username on the app?", "{USERNAME:shaped}"),
            ("the postcode?", "{ADDRESS:postcode}"),
            ("when were you born?", "{DATE_OF_BIRTH:many}"))
    turns = []
    for _ in range(rng.randint(1, 3)):
        question, answer = rng.choice(asks)
        filler = rng.choice(("", "", "um, ", "yeah it's ", "sure, ", "it's ", "uh "))
        turns.append(f"{agent}: {question}\n{caller}: {filler}{answer}")
    return "\n".join(turns)


def compose_names(rng: random.Random) -> str:
    frames = [rng.choice(NAME_FRAMES) for _ in range(rng.randint(1, 2))]
    text = " ".join(frame.replace("%N%", _name(rng), 1).replace("%N%", _name(rng))
                    for frame in frames)
    if rng.random() < 0.5:
        text = rng.choice(NEUTRAL_SENTENCES) + " " + text
    return text


def compose_table(rng: random.Random) -> str:
    columns = rng.sample(_TABLE_COLUMNS, rng.randint(3, 6))
    separator = rng.choice((",", ";", "|", "\t", " | "))
    header = separator.join(name for name, _ in columns)
    if rng.random() < 0.3:
        header = header.upper()
    rows = [separator.join(field for _, field in columns) for _ in range(rng.randint(1, 4))]
    return "\n".join([header] + rows)


_TABLE_COLUMNS = [
    ("name", "{PERSON:full}"), ("holder", "{PERSON:upper}"), ("first", "{PERSON:given}"),
    ("surname", "{PERSON:family}"), ("login", "{USERNAME:shaped}"), ("user", "{USERNAME}"),
    ("dob", "{DATE_OF_BIRTH:many}"), ("born", "{DATE_OF_BIRTH:iso}"), ("phone", "{PHONE}"),
    ("street", "{ADDRESS:street}"), ("town", "{ADDRESS:city}"), ("zip", "{ADDRESS:postcode}"),
    ("addr", "{ADDRESS:lower}"), ("sortcode", "{FINANCIAL:sort_code}"),
    ("bsb", "{FINANCIAL:bsb}"), ("ifsc", "{FINANCIAL:ifsc}"), ("acct", "{FINANCIAL:account}"),
    ("mrn", "{MEDICAL_ID:shaped}"), ("member_no", "{MEDICAL_ID}"), ("plate", "{LICENSE_PLATE}"),
    ("emp_no", "{PERSONAL_ID:shaped}"), ("vin", "{PERSONAL_ID:vin}"),
    ("imei", "{PERSONAL_ID:imei}"),
    ("email", "{EMAIL}"), ("id", "{_uuid}"), ("created", "{_isodate}"), ("qty", "{_num}"),
    ("status", "{_word}"), ("version", "{_version}"), ("price", "{_money}"),
    ("city_hq", "{_place}"),
]

COMPOSERS: dict[str, Callable[[random.Random], str]] = {
    "email": compose_email, "chat": compose_chat, "log": compose_log,
    "address": compose_address, "dob": compose_dob, "ids": compose_ids,
    "transcript": compose_spoken, "names": compose_names, "record": compose_table,
}
