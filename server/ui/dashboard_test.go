package ui_test

import (
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ebb-data/ebb/server"
)

var rewrite = flag.Bool("rewrite", false, "write the screenshot of the README, docs/dashboard.png")

// The page refreshes every second in these tests (?refresh=1), so that a
// change shows within a poll's patience.
const page = "/ui/?refresh=1"

// TestDashboard loads the page from a server without auth and checks what
// it draws against the API: the shards with their states, the runway, the
// plan, the list feature and the shared table, the health. Then it moves
// the clock an hour and checks that the page follows without a reload, and
// applies the plan from the page's own button.
func TestDashboard(t *testing.T) {
	e := newEnv(t, nil)
	e.seed("")
	b := newBrowser(t, 1280, 800)

	b.do("open the dashboard", chromedp.Navigate(e.url+"/"))
	if url := eval[string](b, `location.pathname`); url != "/ui/" {
		t.Fatalf("GET / led to %s, want /ui/", url)
	}
	b.do("open the dashboard with a quick refresh", chromedp.Navigate(e.url+page))
	b.waitFor("the shards of events are drawn", `document.querySelectorAll('[data-index="events"] li.shard').length > 0`)
	if !eval[bool](b, `getComputedStyle(document.getElementById('login')).display === 'none'`) {
		t.Error("the sign-in form is shown by a server without an auth file")
	}

	// The shards, each with its state as a word and not only a colour.
	idx := e.index("events", "")
	want := wantStates(idx, e.clock.Now())
	if got := shardStates(b, "events"); !maps.Equal(got, want) {
		t.Errorf("shards drawn:\n%v\nwant (from the API):\n%v", got, want)
	}
	if n := eval[int](b, `document.querySelectorAll('[data-index="events"] li.shard[data-state="created-ahead"]').length`); n != 2 {
		t.Errorf("%d shards created ahead, want the runway's 2", n)
	}
	for _, sh := range idx.Shards {
		label := eval[string](b, fmt.Sprintf(`document.querySelector('li.shard[data-table=%s]').getAttribute('aria-label')`, js(sh.Table)))
		if !strings.HasPrefix(label, sh.Table+": ") || !strings.Contains(label, "on-demand") {
			t.Errorf("shard %s is labelled %q; want its table, state, times and capacity", sh.Table, label)
		}
	}
	// The runway figure is the API's.
	runway := eval[string](b, `document.querySelector('[data-index="events"] [data-runway]').textContent`)
	if runway != idx.RunwayRemaining || runway != "2h30m" {
		t.Errorf("runway shown %q, API %q, want 2h30m", runway, idx.RunwayRemaining)
	}
	if got := eval[string](b, `document.querySelector('[data-index="events"] [data-now]').textContent`); !strings.Contains(got, e.clock.Now().Format("15:04")) {
		t.Errorf("now shown as %q, want the server's %s", got, e.clock.Now().Format(time.RFC3339))
	}
	if n := eval[int](b, `document.querySelectorAll('[data-plan="events"] li').length`); n != 0 || len(e.plan("events", "").Actions) != 0 {
		t.Errorf("the plan of a fresh index shows %d actions; want none", n)
	}
	if !eval[bool](b, `document.querySelector('[data-plan="events"] [data-plan-empty]') !== null`) {
		t.Error("an empty plan does not say so")
	}

	// The list feature with the rows its table holds, and the shared
	// table with its live items, as the admin routes count them.
	var features struct{ Features []struct{ Table string } }
	e.call(http.MethodGet, "/v1/list-features/user", "", nil, http.StatusOK, &features)
	var tables struct {
		Tables []struct {
			Name string
			Rows int64
		}
		LogicalTables []struct {
			Name  string
			Items int64
		} `json:"logical_tables"`
	}
	e.call(http.MethodGet, "/v1/admin/tables", "", nil, http.StatusOK, &tables)
	var listRows int64 = -1
	for _, pt := range tables.Tables {
		if len(features.Features) == 1 && pt.Name == features.Features[0].Table {
			listRows = pt.Rows
		}
	}
	if listRows < 2 {
		t.Fatalf("the feature's table %v holds %d rows; want its 2 items", features, listRows)
	}
	b.waitFor("the list feature's rows", fmt.Sprintf(`document.querySelector('[data-feature="user/stories/"] [data-rows]')?.dataset.rows === %s`, js(strconv.FormatInt(listRows, 10))))
	if got := eval[string](b, `document.querySelector('[data-feature="user/stories/"]').textContent`); !strings.Contains(got, "(default)") || !strings.Contains(got, "720h") {
		t.Errorf("list feature row %q", got)
	}
	b.waitFor("the shared table's items", `document.querySelector('[data-table-name="orders"] [data-items]')?.dataset.items === '2'`)
	// Each shows its expiry mode, the embedded backend's default.
	for _, sel := range []string{`[data-feature="user/stories/"] [data-expiry]`, `[data-table-name="orders"] [data-expiry]`} {
		if got := eval[string](b, fmt.Sprintf(`document.querySelector(%s)?.dataset.expiry ?? ''`, js(sel))); got != "sweep" {
			t.Errorf("%s: expiry %q, want sweep", sel, got)
		}
	}

	// Backend and health.
	b.waitFor("ready", `document.querySelector('[data-ready]')?.dataset.ready === 'ready'`)
	if got := eval[string](b, `document.querySelector('[data-backend]')?.textContent ?? ''`); got != "pebble" {
		t.Errorf("backend shown %q, want pebble", got)
	}
	if n := eval[int](b, `document.querySelectorAll('[data-leases] tbody tr').length`); n != 2 {
		t.Errorf("%d leases shown, want the shard manager's and the sweeper's", n)
	}
	// Expiry: a figure of the watermark lag and a chart that grows a line
	// as refreshes come.
	b.waitFor("the expiry chart has a line", `(document.querySelector('#expiry polyline.watermark')?.getAttribute('points') ?? '').split(' ').length >= 3`)
	if got := eval[string](b, `document.querySelector('[data-watermark-lag]').textContent`); !strings.HasSuffix(got, " s") && !strings.HasSuffix(got, " h") && !strings.Contains(got, "min") {
		t.Errorf("watermark lag shown as %q", got)
	}

	// Usage: the request units the server metered, per table class.
	b.waitFor("the usage panel", `document.querySelector('[data-usage="index_shard/dynamodb"] [data-unit="write"]') !== null`)
	if n := eval[int](b, `Number(document.querySelector('[data-usage="index_shard/dynamodb"] [data-unit="write"]').dataset.units)`); n < 1 {
		t.Errorf("usage shows %d write units on index shards; the seed wrote events", n)
	}

	// Keyboard: Tab reaches the shards (each says what it is).
	reached := false
	for range 40 {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if eval[bool](b, `document.activeElement?.classList.contains('shard') ?? false`) {
			reached = true
			break
		}
	}
	if !reached {
		t.Error("Tab never reaches a shard of the timeline")
	}
	b.screenshot("1-indexes")

	// An hour later, without a reload: the hot shard is past, the oldest
	// has expired and awaits its drop, the runway shrank, and the plan
	// says what apply would do.
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`))
	e.clock.Advance(time.Hour)
	idx = e.index("events", "")
	if idx.RunwayRemaining != "1h30m" {
		t.Fatalf("runway an hour later: %s, want 1h30m", idx.RunwayRemaining)
	}
	b.waitFor("the runway follows the clock", fmt.Sprintf(`document.querySelector('[data-index="events"] [data-runway]')?.textContent === %s`, js(idx.RunwayRemaining)))
	// Cost: the server's projection of the usage onto a month, per
	// provider, once the usage covers some time (the clock moved).
	b.waitFor("the cost table", `document.querySelectorAll('[data-cost]').length === 2`)
	for _, provider := range []string{"dynamodb", "keyspaces"} {
		if total := eval[float64](b, `Number(document.querySelector('[data-cost="`+provider+`"]').dataset.total)`); !(total > 0) {
			t.Errorf("%s: monthly cost shown as %v, want above zero after the seed's writes", provider, total)
		}
		if text := eval[string](b, `document.querySelector('[data-cost="`+provider+`"]').textContent`); !strings.Contains(text, "$") {
			t.Errorf("%s: cost row %q shows no money", provider, text)
		}
	}
	want = wantStates(idx, e.clock.Now())
	if !slices.Contains(slices.Collect(maps.Values(want)), "expired-awaiting-drop | expired · awaiting drop") {
		t.Fatalf("no shard expired an hour later: %v", want)
	}
	if got := shardStates(b, "events"); !maps.Equal(got, want) {
		t.Errorf("shards drawn an hour later:\n%v\nwant:\n%v", got, want)
	}
	p := e.plan("events", "")
	var created, dropped string
	for _, a := range p.Actions {
		switch a.Op {
		case "create":
			created = a.Table
		case "drop":
			dropped = a.Table
		}
	}
	if created == "" || dropped == "" {
		t.Fatalf("plan an hour later: %+v; want a create and a drop", p)
	}
	for _, a := range p.Actions {
		b.waitFor("the plan shows "+a.Op+" "+a.Table, fmt.Sprintf(`document.querySelector('[data-plan="events"] li[data-op=%s][data-table=%s]') !== null`, js(a.Op), js(a.Table)))
	}
	if !eval[bool](b, fmt.Sprintf(`document.querySelector('li.shard[data-table=%s]').dataset.dropPlanned === 'true'`, js(dropped))) {
		t.Errorf("the shard %s the plan drops is not marked", dropped)
	}
	// The sweeper deleted the item that lived 90 s.
	b.waitFor("the sweeper's deletes are counted", `Number((document.querySelector('[data-deleted]')?.textContent ?? '0').replace(/,/g, '')) >= 1`)
	b.waitFor("the shared table's live items", `document.querySelector('[data-table-name="orders"] [data-items]')?.dataset.items === '1'`)
	b.do("leave the keyboard focus", chromedp.Evaluate[chromedp.Void](`document.activeElement?.blur()`))
	shot := b.screenshot("2-an-hour-later")
	if *rewrite {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Apply from the page: it asks first, because the plan drops a shard.
	b.do("answer the confirmation", chromedp.Evaluate[chromedp.Void](`window.confirm = (m) => { window.__asked = m; return true; }`))
	b.do("apply the plan", chromedp.Click(chromedp.CSS(`[data-index="events"] button[data-admin-action="apply"]`), chromedp.NodeVisible))
	b.waitFor("the created shard is drawn", fmt.Sprintf(`document.querySelector('li.shard[data-table=%s]')?.dataset.state === 'created-ahead'`, js(created)))
	b.waitFor("the dropped shard is gone", fmt.Sprintf(`document.querySelector('li.shard[data-table=%s]') === null`, js(dropped)))
	if asked := eval[string](b, `window.__asked ?? ''`); !strings.Contains(asked, dropped) {
		t.Errorf("the confirmation %q does not name the shard it drops, %s", asked, dropped)
	}
	idx = e.index("events", "")
	if got := shardStates(b, "events"); !maps.Equal(got, wantStates(idx, e.clock.Now())) {
		t.Errorf("shards drawn after the apply:\n%v\nwant:\n%v", got, wantStates(idx, e.clock.Now()))
	}
	b.waitFor("the runway after the apply", fmt.Sprintf(`document.querySelector('[data-index="events"] [data-runway]')?.textContent === %s`, js(idx.RunwayRemaining)))
	b.waitFor("the plan is empty again", `document.querySelector('[data-plan="events"] [data-plan-empty]') !== null`)
	if !eval[bool](b, `window.__sameDocument === true`) {
		t.Error("the page reloaded; it must update in place")
	}
	b.screenshot("3-applied")
}

// Tokens of TestDashboardAuth's auth file.
const (
	adminToken  = "admin-token"
	readerToken = "reader-token" // reads everything, changes nothing
	eventsToken = "events-token" // every route of the index "events"
)

const authFile = `tokens:
  - token: ` + adminToken + `
    scopes: [admin]
  - token: ` + readerToken + `
    name: reader
    scopes: ["read:admin"]
  - token: ` + eventsToken + `
    name: events
    scopes: ["index:events"]
`

// TestDashboardAuth checks the page on a server with an auth file: no
// token shows the sign-in form and nothing else, and a refused token says
// so; a read-only token sees every panel's data but no admin action; a
// token scoped to one index sees that index, may apply its plan, and is
// told what its scopes leave out; the token lasts the tab's session until
// signing out.
func TestDashboardAuth(t *testing.T) {
	auth, err := server.ParseAuth([]byte(authFile))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, auth)
	e.seed(adminToken)
	// An hour on, the plan has work to do: a token that may apply it is
	// offered the button.
	e.clock.Advance(time.Hour)
	if len(e.plan("events", adminToken).Actions) == 0 {
		t.Fatal("no plan an hour later")
	}
	b := newBrowser(t, 1280, 800)

	b.do("open the dashboard", chromedp.Navigate(e.url+page), chromedp.WaitVisible(chromedp.ID("login-token")))
	if !eval[bool](b, `getComputedStyle(document.getElementById('panels')).display === 'none'`) {
		t.Error("the panels show without a token")
	}
	if n := eval[int](b, `document.querySelectorAll('li.shard').length`); n != 0 {
		t.Errorf("%d shards drawn without a token", n)
	}
	if !eval[bool](b, `document.activeElement === document.getElementById('login-token')`) {
		t.Error("the token field does not have the focus")
	}
	b.screenshot("1-sign-in")

	signIn := func(token, scopes string) {
		t.Helper()
		actions := []chromedp.Action[chromedp.Void]{chromedp.SendKeys(chromedp.ID("login-token"), token)}
		if scopes != "" {
			actions = append(actions, chromedp.SendKeys(chromedp.ID("login-scopes"), scopes))
		}
		actions = append(actions, chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
		b.do("sign in with "+token, actions...)
	}
	signIn("not-a-token", "")
	b.waitFor("the refusal is shown", `document.getElementById('login-error').textContent.includes('refused')`)
	if got := eval[string](b, `document.getElementById('login-token').value + '|' + (sessionStorage.getItem('ebb.dashboard.token') ?? '')`); got != "|" {
		t.Errorf("a refused token is kept: %q", got)
	}

	// The read-only token: every panel's data, no action.
	signIn(readerToken, "")
	b.waitFor("the reader sees the shards", `document.querySelectorAll('[data-index="events"] li.shard').length > 0`)
	idx := e.index("events", readerToken)
	if got := eval[string](b, `document.querySelector('[data-index="events"] [data-runway]').textContent`); got != idx.RunwayRemaining {
		t.Errorf("runway shown %q, API %q", got, idx.RunwayRemaining)
	}
	if got, want := shardStates(b, "events"), wantStates(idx, e.clock.Now()); !maps.Equal(got, want) {
		t.Errorf("shards drawn for the reader:\n%v\nwant:\n%v", got, want)
	}
	b.waitFor("the reader sees the leases", `document.querySelectorAll('[data-leases] tbody tr').length === 2`)
	b.waitFor("the reader sees the expiry figures", `document.querySelector('[data-watermark-lag]') !== null`)
	b.waitFor("the reader sees the list feature", `document.querySelector('[data-feature="user/stories/"]') !== null`)
	b.waitFor("the reader sees the shared table", `document.querySelector('[data-table-name="orders"] [data-items]') !== null`)
	b.waitFor("the reader is told why there is no plan", `document.querySelector('[data-plan="events"] [data-needs="reconcile"]') !== null`)
	if n := eval[int](b, `document.querySelectorAll('[data-admin-action], button.primary').length`); n != 0 {
		t.Errorf("the read-only token is offered %d actions", n)
	}
	if got := eval[string](b, `sessionStorage.getItem('ebb.dashboard.token') ?? ''`); got != readerToken {
		t.Errorf("session storage holds %q, want the token", got)
	}
	b.screenshot("2-reader")

	// The token lasts the tab's session: a reload needs no new sign-in.
	b.do("reload", chromedp.Reload())
	b.waitFor("the shards after a reload", `document.querySelectorAll('[data-index="events"] li.shard').length > 0`)

	b.do("sign out", chromedp.Click(chromedp.ID("sign-out"), chromedp.NodeVisible))
	b.waitFor("the sign-in form is back", `getComputedStyle(document.getElementById('login')).display !== 'none' && getComputedStyle(document.getElementById('panels')).display === 'none'`)
	if got := eval[string](b, `sessionStorage.getItem('ebb.dashboard.token') ?? ''`); got != "" {
		t.Errorf("session storage still holds %q after signing out", got)
	}

	// The token of one index: that index and its plan, which it may
	// apply; the rest is beyond its scopes, and the page says so.
	signIn(eventsToken, "index:events")
	b.waitFor("the index token sees the plan", `document.querySelectorAll('[data-plan="events"] li[data-op]').length > 0`)
	b.waitFor("the index token may apply", `document.querySelector('[data-index="events"] button[data-admin-action="apply"]') !== null`)
	for _, sel := range []string{`#health [data-needs="admin"]`, `#expiry [data-needs="metrics"]`, `#lists [data-needs="scope"]`, `#tables [data-needs="scope"]`} {
		if !eval[bool](b, fmt.Sprintf(`document.querySelector(%s) !== null`, js(sel))) {
			t.Errorf("%s: the index token is not told what its scopes leave out", sel)
		}
	}
	b.screenshot("3-index-token")
}

// TestDashboardEmptyNarrow checks a server with nothing in it on a phone's
// width: every panel says what to do first, nothing runs off the side,
// and an index created meanwhile appears without a reload, its shards one
// a line.
func TestDashboardEmptyNarrow(t *testing.T) {
	e := newEnv(t, nil)
	b := newBrowser(t, 390, 844)
	b.do("open the dashboard", chromedp.Navigate(e.url+page))
	b.waitFor("the empty indexes panel", `document.querySelector('[data-empty="indexes"]') !== null`)
	for _, c := range []struct{ sel, text string }{
		{`[data-empty="indexes"]`, "No indexes yet — create one with ebb index create"},
		{`[data-empty="lists"]`, "No list features yet — create one with ebb lists create-feature"},
		{`[data-empty="tables"]`, "No shared tables yet — create one with ebb tables create"},
	} {
		b.waitFor(c.sel, fmt.Sprintf(`document.querySelector(%s)?.textContent.includes(%s)`, js(c.sel), js(c.text)))
	}
	if w := eval[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a %d px window", w[0], w[1])
	}
	b.screenshot("1-empty-narrow")

	e.call(http.MethodPut, "/v1/indexes/clicks", "", map[string]any{
		"table_bucket": "1h", "partition_bucket": "1h", "retention": "2h",
	}, http.StatusCreated, nil)
	b.waitFor("the new index appears", `document.querySelectorAll('[data-index="clicks"] li.shard').length > 0`)
	if got, want := shardStates(b, "clicks"), wantStates(e.index("clicks", ""), e.clock.Now()); !maps.Equal(got, want) {
		t.Errorf("shards drawn:\n%v\nwant:\n%v", got, want)
	}
	if pos := eval[string](b, `getComputedStyle(document.querySelector('li.shard')).position`); pos != "static" {
		t.Errorf("on a narrow window shards are positioned %s; want one a line (static)", pos)
	}
	if w := eval[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		t.Errorf("with an index the page is %d px wide in a %d px window", w[0], w[1])
	}
	b.screenshot("2-index-narrow")
}
