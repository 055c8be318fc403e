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
	// NameCut: the user's name in the menu is cut short (an ellipsis); NameLabel is what a
	// screen reader says for it, NameTitle what a hover shows.
	NameCut              bool
	NameLabel, NameTitle string
}

const measureHeader = `(() => {
	const r = (sel) => document.querySelector(sel).getBoundingClientRect();
	const mid = (b) => b.top + b.height / 2;
	const brand = mid(r(".brand")), name = document.querySelector('.user-menu a[href="/account"]');
	return {
		Height: r("header.top").height, Nav: mid(r(".top nav")) - brand, Menu: mid(r(".user-menu")) - brand,
		NavBottom: r(".top nav").bottom, MenuTop: r(".user-menu").top,
		NameCut: name.scrollWidth > name.clientWidth, NameLabel: name.getAttribute("aria-label"), NameTitle: name.title,
	};
})()`

// An admin's header, the widest (eight sections, the audit log in the menu), is one row
// on a laptop from 1280 px: sections and user menu beside the brand. A long name is cut
// short there rather than pushing the menu down, and said whole to a screen reader and
// on hover. On a
// phone the menu wraps under the sections, within the screen.
func TestHeaderIsOneRowInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	oneRow := func(who string, width, height int64, path string) headerRows {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), browsertest.Navigate(s.srv.URL+path)); err != nil {
			t.Fatalf("open %s at %d px: %v", path, width, err)
		}
		h := run(t, ctx, chromedp.Evaluate[headerRows](measureHeader))
		if h.Nav < -4 || h.Nav > 4 || h.Menu < -4 || h.Menu > 4 || h.Height > 64 {
			t.Errorf("%s's header of %s at %d px is not one row: %+v", who, path, width, h)
		}
		return h
	}
	for _, size := range [][2]int64{{1280, 800}, {1366, 768}} {
		for _, path := range []string{"/", "/jobs", "/admin"} {
			if h := oneRow("admin", size[0], size[1], path); h.NameCut {
				t.Errorf("at %d px the name admin is cut short", size[0])
			}
		}
	}

	err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), browsertest.Navigate(s.srv.URL+"/jobs"))
	if err != nil {
		t.Fatal(err)
	}
	if wide := run(t, ctx, chromedp.Evaluate[string](overflowing)); wide != "" {
		t.Errorf("the header on a phone: %s", wide)
	}
	if h := run(t, ctx, chromedp.Evaluate[headerRows](measureHeader)); h.MenuTop < h.NavBottom {
		t.Errorf("on a phone the user menu does not wrap under the sections: %+v", h)
	}

	const long = "maximilian-schneider-lindqvist"
	_, u := s.member(long)
	pw, err := s.id.ResetPassword(context.Background(), long)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.az.SetGlobalRoles(context.Background(), u, true, false); err != nil {
		t.Fatal(err)
	}
	signOutBrowser(t, ctx)
	signInBrowserAs(t, ctx, s, long, pw)
	if h := oneRow(long, 1280, 800, "/jobs"); !h.NameCut || h.NameLabel != "Your account: "+long || h.NameTitle != h.NameLabel {
		t.Errorf("a long name in the menu at 1280 px: cut %v, said %q, hover %q", h.NameCut, h.NameLabel, h.NameTitle)
	}
}
