package webui

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"
)

// Charts of the web view are SVG drawn here, on the server: no script
// library, nothing fetched by the page.

const (
	chartW   = 640
	chartPad = 40
)

// bar is one bar of a bar chart.
type bar struct {
	Label string
	Value float64
	// Text is the value as shown above the bar.
	Text string
}

// barChart draws vertical bars; id names the SVG element (tests find it).
func barChart(id, title string, bars []bar) template.HTML {
	const h, top, bottom = 220, 20, 50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d">`,
		html.EscapeString(id), html.EscapeString(title), chartW, h, chartW, h)
	maxV := 0.0
	for _, x := range bars {
		maxV = max(maxV, x.Value)
	}
	n := max(len(bars), 1)
	slot := float64(chartW-2*chartPad) / float64(n)
	plotH := float64(h - top - bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, chartPad, h-bottom, chartW-chartPad, h-bottom)
	for i, x := range bars {
		bh := 0.0
		if maxV > 0 {
			bh = x.Value / maxV * plotH
		}
		bx := float64(chartPad) + float64(i)*slot + slot*0.1
		by := float64(h-bottom) - bh
		fmt.Fprintf(&b, `<g class="bar" data-label="%s" data-value="%g"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
			html.EscapeString(x.Label), x.Value, bx, by, slot*0.8, bh, html.EscapeString(x.Label), html.EscapeString(x.Text))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="val">%s</text>`, bx+slot*0.4, by-4, html.EscapeString(x.Text))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="lbl">%s</text></g>`, bx+slot*0.4, h-bottom+16, html.EscapeString(shorten(x.Label, int(slot/6))))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func shorten(s string, n int) string {
	n = max(n, 4)
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// backlogChart draws the small-file backlog over time as a step line.
func backlogChart(id string, pts []backlogPoint) template.HTML {
	const h, top, bottom = 200, 20, 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" role="img" aria-label="small-file backlog over time" viewBox="0 0 %d %d" width="%d" height="%d">`,
		html.EscapeString(id), chartW, h, chartW, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, chartPad, h-bottom, chartW-chartPad, h-bottom)
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="lbl">no samples yet</text></svg>`, chartW/2, h/2)
		return template.HTML(b.String())
	}
	t0, t1 := pts[0].At, pts[len(pts)-1].At
	span := t1.Sub(t0).Seconds()
	maxV := 1
	for _, p := range pts {
		maxV = max(maxV, p.SmallFiles)
	}
	plotW, plotH := float64(chartW-2*chartPad), float64(h-top-bottom)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(chartPad) + plotW
		}
		return float64(chartPad) + t.Sub(t0).Seconds()/span*plotW
	}
	y := func(v int) float64 { return float64(h-bottom) - float64(v)/float64(maxV)*plotH }
	var path strings.Builder
	for i, p := range pts {
		if i == 0 {
			fmt.Fprintf(&path, "M%.1f,%.1f", x(p.At), y(p.SmallFiles))
			continue
		}
		fmt.Fprintf(&path, " H%.1f V%.1f", x(p.At), y(p.SmallFiles))
	}
	fmt.Fprintf(&b, `<path d="%s" class="line" data-points="%d"/>`, path.String(), len(pts))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="lbl">%d</text>`, chartPad-6, top+4, maxV)
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="lbl">%s</text>`, chartPad, h-bottom+16, t0.UTC().Format("15:04:05"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="lbl">%s</text>`, chartW-chartPad, h-bottom+16, t1.UTC().Format("15:04:05"))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
