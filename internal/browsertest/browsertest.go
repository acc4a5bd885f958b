// Package browsertest drives a real headless Chromium (Debian's
// `chromium` package, which scripts/test installs) from Go tests with
// chromedp: pages are loaded as a user's browser loads them, screenshots
// of each page are saved, axe-core (npm, a test peer) checks their
// accessibility, and a 390 px wide viewport checks they work on a phone.
//
// One browser per test package: call Main from TestMain; Shared starts
// the browser on first use (so `go test -short` never starts one: Shared
// skips under -short) and Main closes it after the tests. Each test opens
// its own Tab (a new tab with its own viewport and HTTP credentials).
//
// Environment:
//
//	WEIR_CHROMIUM     the browser binary (default: chromium on PATH)
//	WEIR_AXE_JS       axe.min.js (default: $HOME/.cache/weir/axe-core/
//	                  node_modules/axe-core/axe.min.js, installed there
//	                  with npm on first use when missing)
//	WEIR_SCREENSHOTS  where screenshots go (default: $TMPDIR/
//	                  weir-screenshots); each test logs the path of each
//	                  screenshot it saves
//
// Without chromium (or axe-core and npm) the tests skip, except under CI
// (CI set), where they fail: scripts/test installs both.
package browsertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// AxeVersion is the axe-core release installed on demand.
const AxeVersion = "4.14.1"

// Browser is one headless Chromium process.
type Browser struct {
	allocCancel context.CancelFunc
	ctx         context.Context // the browser's first tab: keeps it alive
	cancel      context.CancelFunc
}

var shared struct {
	mu  sync.Mutex
	b   *Browser
	err error
}

// Main runs the package's tests, then closes the shared browser and runs
// cleanups (weirbin.Cleanup, say).
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	shared.mu.Lock()
	if shared.b != nil {
		shared.b.Close()
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// unavailable skips the test, or fails it under CI.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (scripts/test installs it)")
	}
	t.Skip(msg + " (run scripts/test, or install it)")
}

// Shared returns the package's browser, started on first use. It skips
// the test under -short.
func Shared(t testing.TB) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil && shared.err == nil {
		shared.b, shared.err = Start()
	}
	if shared.err != nil {
		if strings.Contains(shared.err.Error(), "not found") {
			unavailable(t, "%v", shared.err)
		}
		t.Fatal(shared.err)
	}
	return shared.b
}

// Start starts a headless Chromium.
func Start() (*Browser, error) {
	path := os.Getenv("WEIR_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			return nil, fmt.Errorf("browsertest: chromium not found on PATH (apt-get install chromium, or set WEIR_CHROMIUM)")
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first Run starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		acancel()
		return nil, fmt.Errorf("browsertest: starting %s: %w", path, err)
	}
	return &Browser{allocCancel: acancel, ctx: ctx, cancel: cancel}, nil
}

// Close stops the browser.
func (b *Browser) Close() {
	b.cancel()
	b.allocCancel()
}

// TabOptions configure a tab.
type TabOptions struct {
	Width, Height int64 // viewport; 0: 1280×900
	// User and Password are sent as HTTP basic authentication with
	// every request ("" User: none).
	User, Password string
}

// Tab is one browser tab of a test.
type Tab struct {
	t     testing.TB
	ctx   context.Context
	width int64
}

// Tab opens a tab, closed at the test's cleanup.
func (b *Browser) Tab(t testing.TB, o TabOptions) *Tab {
	t.Helper()
	if o.Width == 0 {
		o.Width, o.Height = 1280, 900
	}
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	steps := []chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(o.Width, o.Height)}
	if o.User != "" {
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(o.User+":"+o.Password))
		steps = append(steps, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}})
			return err
		}))
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browsertest: opening a tab: %v", err)
	}
	return &Tab{t: t, ctx: ctx, width: o.Width}
}

// step bounds one browser action.
func (p *Tab) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, 60*time.Second)
}

// Go navigates to url, waits for the page to load and returns the main
// document's HTTP status.
func (p *Tab) Go(url string) int {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		p.t.Fatalf("browsertest: loading %s: %v", url, err)
	}
	return int(resp.Status)
}

// Text is the visible text of the first element matching the CSS
// selector (waiting for it to be there).
func (p *Tab) Text(css string) string {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		p.t.Fatalf("browsertest: text of %s: %v", css, err)
	}
	return s
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value (JSON) into a T.
func Eval[T any](p *Tab, expr string) T {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("browsertest: evaluating %.80q: %v", expr, err)
	}
	return v
}

// Do runs chromedp actions in the tab (clicks, form input).
func (p *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browsertest: %v", err)
	}
}

// SubmitAndWait runs the actions (which submit a form or follow a link)
// and waits for the next page to load; it returns that page's status.
func (p *Tab) SubmitAndWait(steps ...chromedp.Action[chromedp.Void]) int {
	p.t.Helper()
	ctx, cancel := p.step()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		p.t.Fatalf("browsertest: %v", err)
	}
	return int(resp.Status)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot saves a full-page PNG named name under the screenshot
// directory (WEIR_SCREENSHOTS, default $TMPDIR/weir-screenshots), in a
// folder per test, logs its path and returns it.
func (p *Tab) Screenshot(name string) string {
	p.t.Helper()
	dir := os.Getenv("WEIR_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "weir-screenshots")
	}
	dir = filepath.Join(dir, unsafeName.ReplaceAllString(p.t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := p.step()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("browsertest: screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%dpx.png", unsafeName.ReplaceAllString(name, "_"), p.width))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
	return path
}

// HorizontalOverflow says how far the page is wider than the viewport
// (0: not) and names the first element past the right edge that is not
// inside a scrolling region.
func (p *Tab) HorizontalOverflow() (int, string) {
	p.t.Helper()
	type dims struct {
		Scroll, Inner int
		Culprit       string
	}
	d := Eval[dims](p, `(() => {
  const w = window.innerWidth;
  let culprit = "";
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.right > w + 1) {
      let inScroller = false;
      for (let a = el.parentElement; a; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX;
        if (o === "auto" || o === "scroll" || o === "hidden") { inScroller = true; break; }
      }
      if (!inScroller) { culprit = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (typeof el.className === "string" && el.className ? "." + el.className : ""); break; }
    }
  }
  return {Scroll: document.documentElement.scrollWidth, Inner: w, Culprit: culprit};
})()`)
	if d.Scroll <= d.Inner {
		return 0, ""
	}
	return d.Scroll - d.Inner, d.Culprit
}

// CheckNoHorizontalOverflow fails the test when the page is wider than
// the viewport (a phone user would have to scroll sideways); wide tables
// must scroll inside their own region.
func (p *Tab) CheckNoHorizontalOverflow(what string) {
	p.t.Helper()
	if over, culprit := p.HorizontalOverflow(); over > 0 {
		p.t.Errorf("%s: the page is %d px wider than the %d px viewport (first element past the edge: %s)", what, over, p.width, culprit)
	}
}
