"""Small server-side SVG charts (no JavaScript, no CDN): a line chart with CI bands and target
lines, and a horizontal bar chart. Input is plain numbers; every label is escaped."""

from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#4b5563"]


@dataclass
class Series:
    name: str
    points: list[
        tuple[str, float | None, float | None, float | None]
    ]  # (x label, value, ci low, ci high)


@dataclass
class LineChart:
    title: str
    x_labels: list[str]
    series: list[Series]
    targets: list[tuple[str, float]] = field(default_factory=list)
    y_min: float = -0.2
    y_max: float = 1.0
    width: int = 760
    height: int = 280

    def svg(self) -> SafeString:
        left, right, top, bottom = 48, 150, 28, 40
        plot_w, plot_h = self.width - left - right, self.height - top - bottom
        n = max(len(self.x_labels), 1)

        def x(i):
            return left + (plot_w * (i + 0.5) / n)

        def y(v):
            v = min(max(v, self.y_min), self.y_max)
            return top + plot_h * (1 - (v - self.y_min) / (self.y_max - self.y_min))

        parts = [
            f'<svg class="chart" role="img" aria-label="{escape(self.title)}" viewBox="0 0 {self.width} {self.height}" xmlns="http://www.w3.org/2000/svg">',
            f'<text x="{left}" y="16" class="chart-title">{escape(self.title)}</text>',
        ]
        for tick in _ticks(self.y_min, self.y_max):
            parts.append(
                f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e5e7eb"/>'
            )
            parts.append(
                f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" class="tick">{tick:.2f}</text>'
            )
        for i, label in enumerate(self.x_labels):
            if n <= 14 or i % max(1, n // 12) == 0:
                parts.append(
                    f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">{escape(label)}</text>'
                )
        for name, value in self.targets:
            parts.append(
                f'<line x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#b3261e" stroke-dasharray="5 4"/>'
            )
            parts.append(
                f'<text x="{left + plot_w - 4}" y="{y(value) - 4:.1f}" text-anchor="end" class="tick target">{escape(name)} {value:.2f}</text>'
            )
        index = {label: i for i, label in enumerate(self.x_labels)}
        for k, s in enumerate(self.series):
            color = PALETTE[k % len(PALETTE)]
            band = [
                (index[p[0]], p[2], p[3])
                for p in s.points
                if p[2] is not None and p[3] is not None and p[0] in index
            ]
            if len(band) >= 2:
                upper = " ".join(f"{x(i):.1f},{y(hi):.1f}" for i, _, hi in band)
                lower = " ".join(f"{x(i):.1f},{y(lo):.1f}" for i, lo, _ in reversed(band))
                parts.append(
                    f'<polygon points="{upper} {lower}" fill="{color}" fill-opacity="0.12" stroke="none"/>'
                )
            pts = [(index[p[0]], p[1]) for p in s.points if p[1] is not None and p[0] in index]
            if len(pts) >= 2:
                parts.append(
                    f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in pts)}"/>'
                )
            for i, lo, hi in band:
                # a whisker per point: the first ISO week (one point, no band yet) shows its CI
                top_y, bottom_y, cx = y(hi), y(lo), x(i)
                parts.append(
                    f'<g class="whisker" stroke="{color}" stroke-width="1.5">'
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{top_y:.1f}" y2="{bottom_y:.1f}"/>'
                    f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{top_y:.1f}" y2="{top_y:.1f}"/>'
                    f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{bottom_y:.1f}" y2="{bottom_y:.1f}"/>'
                    f"<title>{escape(s.name)} {escape(self.x_labels[i])}: 95 % CI [{lo:.3f}, {hi:.3f}]</title></g>"
                )
            for i, v in pts:
                parts.append(
                    f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{color}"><title>{escape(s.name)} {escape(self.x_labels[i])}: {v:.3f}</title></circle>'
                )
            parts.append(
                f'<rect x="{left + plot_w + 4}" y="{top + 40 + 16 * k}" width="10" height="10" fill="{color}"/>'
            )
            parts.append(
                f'<text x="{left + plot_w + 18}" y="{top + 49 + 16 * k}" class="tick">{escape(s.name)}</text>'
            )
        if not any(p[1] is not None for s in self.series for p in s.points):
            parts.append(
                f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" text-anchor="middle" class="tick">no figures yet</text>'
            )
        parts.append("</svg>")
        return mark_safe("".join(parts))  # every label above is escaped


@dataclass
class BarChart:
    """Bars are ``(label, value)`` or ``(label, value, n)``: with n, each bar says what it rests
    on ("100 % (n = 3)"). Counts (``percent=False``) print as integers when whole."""

    title: str
    bars: list[tuple]
    x_max: float = 1.0
    percent: bool = True
    width: int = 520

    def svg(self) -> SafeString:
        left, right, row = 120, 90, 20
        height = 30 + row * max(len(self.bars), 1)
        plot_w = self.width - left - right
        parts = [
            f'<svg class="chart" role="img" aria-label="{escape(self.title)}" viewBox="0 0 {self.width} {height}" xmlns="http://www.w3.org/2000/svg">',
            f'<text x="0" y="16" class="chart-title">{escape(self.title)}</text>',
        ]
        for k, (label, value, *rest) in enumerate(self.bars):
            n = rest[0] if rest else None
            top = 26 + k * row
            parts.append(
                f'<text x="{left - 6}" y="{top + 12}" text-anchor="end" class="tick">{escape(label)}</text>'
            )
            if value is None:
                parts.append(f'<text x="{left + 4}" y="{top + 12}" class="tick">—</text>')
                continue
            w = plot_w * min(max(value / self.x_max, 0), 1) if self.x_max else 0
            shown = f"{value:.0%}" if self.percent else _number(value)
            if n is not None:
                shown += f" (n = {n})"
            parts.append(
                f'<rect x="{left}" y="{top + 2}" width="{w:.1f}" height="{row - 6}" fill="{PALETTE[0]}"/>'
            )
            parts.append(f'<text x="{left + w + 4:.1f}" y="{top + 12}" class="tick">{shown}</text>')
        parts.append("</svg>")
        return mark_safe("".join(parts))  # every label above is escaped


def _number(value: float) -> str:
    """17.0 → "17"; 0.25 → "0.25"."""
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def _ticks(lo: float, hi: float) -> list[float]:
    step = 0.25 if hi - lo > 0.6 else 0.1
    first = round(lo / step) * step
    out, t = [], first
    while t <= hi + 1e-9:
        if t >= lo - 1e-9:
            out.append(round(t, 4))
        t += step
    return out
