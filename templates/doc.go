// Package templates holds the portal's templ components, one file per page area.
// Generated *_templ.go files are committed; templates_test fails when they are stale.
package templates
