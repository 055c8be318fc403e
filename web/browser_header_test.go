package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// headerRows is how the page's header lies: its height, and how far the centres of the
// sections and of the user menu are from the brand's, down (px).
type headerRows struct {
	Height, Nav, Menu  float64
	NavBottom, MenuTop float64
	// NameCut: the user's name in the menu is cut short (an ellipsis), to NameWidth px;
	// NameLabel is what a screen reader says for it, NameTitle what a hover shows.
	NameCut              bool
	NameWidth            float64
	NameLabel, NameTitle string
}

const measureHeader = `(() => {
	const r = (sel) => document.querySelector(sel).getBoundingClientRect();
	const mid = (b) => b.top + b.height / 2;
	const brand = mid(r(".brand")), name = document.querySelector('.user-menu a[href="/account"]');
	return {
		Height: r("header.top").height, Nav: mid(r(".top nav")) - brand, Menu: mid(r(".user-menu")) - brand,
		NavBottom: r(".top nav").bottom, MenuTop: r(".user-menu").top,
		NameCut: name.scrollWidth > name.clientWidth, NameWidth: name.getBoundingClientRect().width,
		NameLabel: name.getAttribute("aria-label"), NameTitle: name.title,
	};
})()`

// An admin's header, the widest (eight sections, the audit log in the menu), is one row
// on a laptop from 1280 px: sections and user menu beside the brand. The user's name
// takes the room left on that row: whole where it fits, cut short where it does not
// rather than pushing the menu down, and said whole to a screen reader and on hover. On
// a phone the menu wraps under the sections, within the screen.
func TestHeaderIsOneRowInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	at := func(width, height int64, path string) headerRows {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), browsertest.Navigate(s.srv.URL+path)); err != nil {
			t.Fatalf("open %s at %d px: %v", path, width, err)
		}
		return run(t, ctx, chromedp.Evaluate[headerRows](measureHeader))
	}
	oneRow := func(who string, width, height int64, path string) headerRows {
		t.Helper()
		h := at(width, height, path)
		if h.Nav < -4 || h.Nav > 4 || h.Menu < -4 || h.Menu > 4 || h.Height > 64 {
			t.Errorf("%s's header of %s at %d px is not one row: %+v", who, path, width, h)
		}
		if wide := run(t, ctx, chromedp.Evaluate[string](overflowing)); wide != "" {
			t.Errorf("%s's header of %s at %d px: %s", who, path, width, wide)
		}
		return h
	}
	onPhone := func(who string) {
		t.Helper()
		h := at(390, 844, "/jobs")
		if wide := run(t, ctx, chromedp.Evaluate[string](overflowing)); wide != "" {
			t.Errorf("%s's header on a phone: %s", who, wide)
		}
		if h.MenuTop < h.NavBottom {
			t.Errorf("on a phone %s's user menu does not wrap under the sections: %+v", who, h)
		}
	}
	for _, size := range [][2]int64{{1280, 800}, {1366, 768}} {
		for _, path := range []string{"/", "/jobs", "/admin"} {
			if h := oneRow("admin", size[0], size[1], path); h.NameCut {
				t.Errorf("at %d px the name admin is cut short", size[0])
			}
		}
	}
	onPhone("admin")

	// asAdmin signs the browser in as a new admin called name.
	asAdmin := func(name string) {
		t.Helper()
		_, u := s.member(name)
		pw, err := s.id.ResetPassword(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.az.SetGlobalRoles(context.Background(), u, true, false); err != nil {
			t.Fatal(err)
		}
		signOutBrowser(t, ctx)
		signInBrowserAs(t, ctx, s, name, pw)
	}
	said := func(h headerRows, name string) bool {
		return h.NameLabel == "Your account: "+name && h.NameTitle == h.NameLabel
	}

	// Eighteen letters fit whole beside an admin's sections on a wide screen; at 1280 px
	// they may be cut, the row kept.
	const medium = "alexandra-kowalska"
	asAdmin(medium)
	for _, width := range []int64{1600, 1920} {
		if h := oneRow(medium, width, 900, "/admin"); h.NameCut || !said(h, medium) {
			t.Errorf("an 18-letter name in the menu at %d px: cut %v (%.0f px wide), said %q, hover %q", width, h.NameCut, h.NameWidth, h.NameLabel, h.NameTitle)
		}
	}
	oneRow(medium, 1280, 800, "/admin")
	onPhone(medium)

	// Thirty letters do not fit at 1280 px: cut short, not to nothing, and said whole.
	const long = "maximilian-schneider-lindqvist"
	asAdmin(long)
	for _, width := range []int64{1280, 1366} {
		if h := oneRow(long, width, 800, "/jobs"); !h.NameCut || h.NameWidth < 48 || !said(h, long) {
			t.Errorf("a long name in the menu at %d px: cut %v to %.0f px, said %q, hover %q", width, h.NameCut, h.NameWidth, h.NameLabel, h.NameTitle)
		}
	}
	if h := oneRow(long, 1920, 900, "/jobs"); h.NameCut {
		t.Errorf("a 30-letter name is cut short at 1920 px, %.0f px wide", h.NameWidth)
	}
	onPhone(long)
}
