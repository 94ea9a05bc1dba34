"""A record column as a line in SVG: cheap enough to redraw every round (plain text, no
plotting library), read by the STRADS page and the live plot in Jupyter. Axes with their end
values as ticks; the caption says what is drawn against what."""
import html
import math

#: How a column and an x axis are named in a caption.
NAMES = {"gap": "duality gap", "time": "seconds"}
#: Room for the tick labels: left of the plot, below it; and the margin elsewhere.
LEFT, BOTTOM, MARGIN = 64, 18, 6


def chart(records, name, x="round", width=420, height=120):
    """An SVG figure of ``name`` against ``x`` over ``records`` (log scale when its values are
    positive over a decade or more); "" with fewer than two values."""
    points = [(r[x], r[name]) for r in records
              if isinstance(r.get(name), (int, float)) and math.isfinite(r[name])]
    if len(points) < 2:
        return ""
    values = [v for _, v in points]
    log = min(values) > 0 and max(values) >= 10 * min(values)
    ys = [math.log10(v) for v in values] if log else values
    x0, x1 = points[0][0], points[-1][0]
    low, high = min(ys), max(ys)
    right, bottom = width - MARGIN, height - BOTTOM

    def px(value):
        return LEFT + (right - LEFT) * (value - x0) / ((x1 - x0) or 1)

    def py(value):
        return bottom - (bottom - MARGIN) * (value - low) / ((high - low) or 1)

    xy = " ".join(f"{px(a):.1f},{py(b):.1f}" for (a, _), b in zip(points, ys))
    ticks = (_text(LEFT - 4, MARGIN + 4, number(max(values), 3), "end")
             + _text(LEFT - 4, bottom, number(min(values), 3), "end")
             + _text(LEFT, height - 4, number(x0, 3), "start")
             + _text(right, height - 4, number(x1, 3), "end"))
    axes = f"<path fill='none' stroke='#888' d='M{LEFT},{MARGIN}V{bottom}H{right}'/>"
    label = (f"{NAMES.get(name, name)}{' (log scale)' if log else ''} against "
             f"{NAMES.get(x, x)}: {number(values[0])} → {number(values[-1])}")
    return (f"<figure><svg width='{width}' height='{height}' role='img' "
            f"aria-label='{html.escape(label)}'>{axes}{ticks}<polyline fill='none' "
            f"stroke='#1f77b4' stroke-width='1.5' points='{xy}'/></svg>"
            f"<figcaption>{html.escape(label)}</figcaption></figure>")


def _text(x, y, text, anchor):
    return (f"<text x='{x}' y='{y}' font-size='10' text-anchor='{anchor}' "
            f"fill='#444'>{html.escape(text)}</text>")


def number(value, digits=6):
    return "-" if value is None else f"{value:.{digits}g}"
