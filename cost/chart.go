package cost

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"time"
)

// chartColors tells the strategies apart.
var chartColors = map[string]string{
	NativeTTL:        "#d62728",
	Shards:           "#1f77b4",
	ShardsSweeper:    "#2ca02c",
	NativeTTLSweeper: "#ff7f0e",
}

// cohort is rows written at rate per second, each held hold seconds.
type cohort struct{ rate, hold float64 }

// cumulative returns the cost of a strategy from an empty table up to t
// seconds: throughput accrues from the start; storage grows while rows
// accumulate, then holds steady (a shard's saw-tooth smoothed to its
// average); expiry is paid from the first deletions on.
func (m model) cumulative(name string, period time.Duration, t float64) float64 {
	w := m.w
	r := w.RowsPerSecond
	own, rest := r*w.OwnTTLShare, r*(1-w.OwnTTLShare)
	ret := time.Duration(w.Retention).Seconds()
	ownTTL := time.Duration(w.OwnTTL).Seconds()
	shardHold := ret + period.Seconds()/2
	b := m.strategy(name, period)
	cost := (b.Writes + b.Reads) * t / SecondsPerMonth
	var cs []cohort
	var expiryStart float64
	switch name {
	case NativeTTL:
		cs = []cohort{{rest, ret + m.lag}, {own, ownTTL + m.lag}}
		expiryStart = min(ret, ownTTL) + m.lag
		if own == 0 {
			expiryStart = ret + m.lag
		}
	case Shards:
		cs = []cohort{{r, shardHold}}
	case ShardsSweeper:
		cs = []cohort{{rest, shardHold}, {own, ownTTL}}
		expiryStart = ownTTL
	case NativeTTLSweeper:
		cs = []cohort{{rest, ret + m.lag}, {own, ownTTL}}
		expiryStart = ownTTL
	}
	for _, c := range cs {
		held := t * t / 2 // byte-seconds per (row per second)
		if t > c.hold {
			held = c.hold*c.hold/2 + c.hold*(t-c.hold)
		}
		cost += c.rate * held * m.stored / GB * m.pp.StorageGBMonth / SecondsPerMonth
	}
	if t > expiryStart {
		cost += b.Expiry * (t - expiryStart) / SecondsPerMonth
	}
	return cost
}

// Chart draws, for each provider, the cumulative cost of each strategy
// from an empty table over twice the retention period, as a small SVG.
func Chart(w Workload, p Prices) ([]byte, error) {
	if _, err := Run(w, p); err != nil {
		return nil, err
	}
	w = w.withDefaults()
	const (
		plotWidth, panelH = 420, 300
		left              = 90
		top, bottom       = 40, 40
	)
	// The legend's column is as wide as its longest title, so that none
	// is cut off at the edge of the picture.
	longest := 0
	for _, s := range Strategies {
		longest = max(longest, len(StrategyTitles[s]))
	}
	right := 36 + longest*legendCharWidth + 10
	width := left + plotWidth + right
	horizon := 2 * time.Duration(w.Retention).Seconds()
	const steps = 60
	var buf bytes.Buffer
	height := panelH * len(w.Providers)
	fmt.Fprintf(&buf, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&buf, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, name := range w.Providers {
		m := newModel(w, p, name)
		y0 := i * panelH
		plotW, plotH := float64(width-left-right), float64(panelH-top-bottom)
		maxCost := 0.0
		series := map[string][]float64{}
		for _, s := range Strategies {
			pts := make([]float64, steps+1)
			for k := range pts {
				pts[k] = m.cumulative(s, time.Duration(w.ShardPeriod), horizon*float64(k)/steps)
				maxCost = max(maxCost, pts[k])
			}
			series[s] = pts
		}
		if maxCost <= 0 || math.IsNaN(maxCost) || math.IsInf(maxCost, 0) {
			maxCost = 1
		}
		// The y axis ends on a round value, and its ticks fall on round
		// values: 1, 2, 2.5 or 5 times a power of ten.
		step := max(tickStep(maxCost/4), 0.01)
		ticks := int(math.Ceil(maxCost/step - 1e-9))
		maxCost = step * float64(ticks)
		fmt.Fprintf(&buf, `<text x="%d" y="%d" font-size="14">%s: cumulative cost (%s) from an empty table</text>`+"\n",
			left, y0+20, html.EscapeString(name), html.EscapeString(p.Currency))
		fmt.Fprintf(&buf, `<rect x="%d" y="%d" width="%g" height="%g" fill="none" stroke="#999"/>`+"\n", left, y0+top, plotW, plotH)
		for k := 0; k <= ticks; k++ {
			v := step * float64(k)
			y := float64(y0+top) + plotH - plotH*float64(k)/float64(ticks)
			fmt.Fprintf(&buf, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, money(v))
		}
		for k := 0; k <= 4; k++ {
			days := horizon * float64(k) / 4 / 86400
			fmt.Fprintf(&buf, `<text x="%.1f" y="%d" text-anchor="middle">day %.0f</text>`+"\n", float64(left)+plotW*float64(k)/4, y0+panelH-bottom+16, days)
		}
		for j, s := range Strategies {
			fmt.Fprintf(&buf, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, chartColors[s])
			for k, v := range series[s] {
				x := float64(left) + plotW*float64(k)/steps
				y := float64(y0+top) + plotH - plotH*v/maxCost
				if k > 0 {
					buf.WriteByte(' ')
				}
				fmt.Fprintf(&buf, "%.1f,%.1f", x, y)
			}
			buf.WriteString("\"/>\n")
			ly := y0 + top + 14 + 20*j
			fmt.Fprintf(&buf, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", width-right+10, ly-4, width-right+30, ly-4, chartColors[s])
			fmt.Fprintf(&buf, `<text x="%d" y="%d">%s</text>`+"\n", width-right+36, ly, html.EscapeString(StrategyTitles[s]))
		}
	}
	buf.WriteString("</svg>\n")
	return buf.Bytes(), nil
}

// legendCharWidth is a generous width of one character of the legend's
// 12-pixel sans-serif text, so that the column computed from it holds it.
const legendCharWidth = 7

// tickStep is the smallest round step (1, 2, 2.5 or 5 times a power of
// ten) of at least raw.
func tickStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// money formats an amount with thousands separators and cents.
func money(v float64) string {
	neg := v < 0
	if neg {
		v = -v
	}
	cents := int64(math.Round(v * 100))
	whole, frac := cents/100, cents%100
	s := fmt.Sprint(whole)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	s = fmt.Sprintf("%s.%02d", s, frac)
	if neg {
		s = "-" + s
	}
	return s
}

// Money formats an amount as the tables show it: "41,062.50".
func Money(v float64) string { return money(v) }
