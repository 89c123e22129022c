"""Dates and times as people write them in conversation data (LoCoMo's session_N_date_time,
LongMemEval's haystack_dates, a user's own export), read into one naive local datetime.

    1:56 pm on 8 May, 2023        LoCoMo (English; also 'May' abbreviated, without the comma)
    8 May, 2023                   the same date without a time (midnight)
    2023-05-08  2023-05-08T13:56  ISO 8601 (seconds, fractions, 'Z' or '+08:00' allowed)
    2023/05/20 (Sat) 02:21        LongMemEval (the weekday and the time optional)
    2026年3月2日                   Chinese, a date alone (日 or 号; a weekday such as 星期一 / 周一 may follow)
    下午3:10 2026年3月2日          Chinese with a time before or after the date: 3:10, 3：10, 3点, 3点10分,
    2026年3月2日 晚上8:40          3点半, in 24 hours or after a period word

Period words and the 12-hour clock, as a Chinese speaker reads them (the English am/pm rule):
凌晨 早上 早晨 清晨 上午 are a.m. (12 is midnight); 下午 傍晚 晚上 are p.m. (1-11 gain 12 hours,
12 stays noon); 中午 is around noon (1-3 become 13-15).  A 24-hour figure after a p.m. word
('下午15:10') is taken as written.  Words that name no clear half of the day (深夜, 夜里, 半夜: '夜里2点'
is usually 02:00, '夜里11点' 23:00) are not read: write 凌晨2:00 or 23:00.

Times are the speakers' wall clock: an ISO offset is dropped after reading, never converted, so a
session keeps the calendar day its people lived it (the daily file memory/YYYY-MM-DD.md is named from
it).  Full-width digits and punctuation are read as their ASCII forms (NFKC).
"""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime

ACCEPTED = ("'1:56 pm on 8 May, 2023' (LoCoMo), '8 May, 2023', ISO 8601 ('2023-05-08', '2023-05-08T13:56', "
            "'2023-05-08 13:56:00+08:00'), '2023/05/20 (Sat) 02:21' (LongMemEval), '2026年3月2日', "
            "'下午3:10 2026年3月2日', '2026年3月2日 晚上8:40', '2026年3月2日 15:10', '2026年3月2日 下午3点半' "
            "(period words: 凌晨 早上 早晨 清晨 上午 中午 下午 傍晚 晚上)")

AM_WORDS = ("凌晨", "早上", "早晨", "清晨", "上午")
PM_WORDS = ("下午", "傍晚", "晚上")
NOON_WORDS = ("中午",)
_PERIOD = "|".join(AM_WORDS + PM_WORDS + NOON_WORDS)

_ENGLISH = re.compile(
    r"(?:(?P<h>\d{1,2}):(?P<mi>\d{2})\s*(?P<ampm>[ap]\.?m\.?)\s+on\s+)?"
    r"(?P<d>\d{1,2})\s+(?P<mon>[A-Za-z]+)\.?\s*,?\s*(?P<y>\d{4})", re.IGNORECASE)
_SLASH = re.compile(r"(?P<y>\d{4})/(?P<mo>\d{1,2})/(?P<d>\d{1,2})"
                    r"(?:\s*\(\s*[A-Za-z]{3,9}\s*\))?(?:\s+(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?)?")
_CN_DATE = r"(?P<y>\d{4})\s*年\s*(?P<mo>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]"
_CN_WEEKDAY = r"(?:\s*\(?\s*(?:星期|礼拜|周)[一二三四五六日天]\s*\)?)?"
_CN_TIME = (rf"(?P<period>{_PERIOD})?\s*(?P<h>\d{{1,2}})\s*"
            r"(?::\s*(?P<mi>\d{2})(?::(?P<s>\d{2}))?|点\s*(?:(?P<half>半)|(?P<mi2>\d{1,2})\s*分?)?)")
_CN_DATE_TIME = re.compile(rf"{_CN_DATE}{_CN_WEEKDAY}(?:\s*{_CN_TIME})?")
_CN_TIME_DATE = re.compile(rf"{_CN_TIME}\s*{_CN_DATE}{_CN_WEEKDAY}")

_MONTHS = {name: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")), start=1) for name in names}


class UnreadableDate(ValueError):
    """The text is no date in any accepted form; str() is one line that lists the forms."""


def _clock(hour: int, period: str | None, raw: str) -> int:
    """The 24-hour hour of `hour` said after `period` (None: already 24-hour)."""
    if period is None:
        return hour
    if period in AM_WORDS or period in ("am", "a.m.", "am.", "a.m"):
        if not 1 <= hour <= 12:
            raise UnreadableDate(f"{raw!r}: {hour} o'clock is not a time of the {period} half of the day")
        return 0 if hour == 12 else hour
    if period in NOON_WORDS:
        return hour + 12 if 1 <= hour <= 3 else hour
    if 1 <= hour <= 11:  # p.m.
        return hour + 12
    if hour == 0:
        raise UnreadableDate(f"{raw!r}: 0 o'clock is not a time of the {period} half of the day")
    return hour  # 12 (noon) and a 24-hour figure as written


def _build(raw: str, y: str, mo: int, d: str, h: int = 0, mi: str | int | None = 0, s: str | None = None) -> datetime:
    try:
        return datetime(int(y), mo, int(d), h, int(mi or 0), int(s or 0))
    except ValueError as exc:
        raise UnreadableDate(f"{raw!r} is not a valid date or time ({exc})") from None


def parse_when(raw: str) -> datetime:
    """The naive local datetime `raw` names, in any form of ACCEPTED; UnreadableDate otherwise."""
    if not isinstance(raw, str):
        raise UnreadableDate(f"{raw!r} is not text; accepted forms: {ACCEPTED}")
    text = unicodedata.normalize("NFKC", raw).strip()
    if m := _ENGLISH.fullmatch(text):
        month = _MONTHS.get(m["mon"].lower())
        if month is not None:
            hour = 0
            if m["h"] is not None:
                period = m["ampm"].lower().replace(".", "")
                if not 1 <= int(m["h"]) <= 12:  # English am/pm is a 12-hour clock only
                    raise UnreadableDate(f"{raw!r}: {m['h']} is not an hour of a 12-hour clock ({period})")
                hour = _clock(int(m["h"]), "am" if period == "am" else "pm", raw)
            return _build(raw, m["y"], month, m["d"], hour, m["mi"])
    if m := _SLASH.fullmatch(text):
        return _build(raw, m["y"], int(m["mo"]), m["d"], int(m["h"] or 0), m["mi"], m["s"])
    if m := (_CN_DATE_TIME.fullmatch(text) or _CN_TIME_DATE.fullmatch(text)):
        hour, minute = 0, 0
        if m["h"] is not None:
            hour = _clock(int(m["h"]), m["period"], raw)
            minute = 30 if m["half"] else int(m["mi"] or m["mi2"] or 0)
        return _build(raw, m["y"], int(m["mo"]), m["d"], hour, minute, m["s"])
    if re.fullmatch(r"\d{4}-?\d{2}-?\d{2}([T ].+)?", text):
        try:
            when = datetime.fromisoformat(text)
        except ValueError as exc:
            raise UnreadableDate(f"{raw!r} is not a valid ISO 8601 date or time ({exc}); accepted forms: "
                                 f"{ACCEPTED}") from None
        return when.replace(tzinfo=None)  # the speakers' wall clock, see the module docstring
    raise UnreadableDate(f"{raw!r} is not a date in an accepted form: {ACCEPTED}")
