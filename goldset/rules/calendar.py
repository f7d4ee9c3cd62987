"""ISO weeks, the time unit of agreement snapshots and spot-checks (``"2026-W47"``)."""

import datetime as dt


def iso_week(moment: dt.date | dt.datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def week_start(week: str) -> dt.date:
    year, number = week.split("-W")
    return dt.date.fromisocalendar(int(year), int(number), 1)
