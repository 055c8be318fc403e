package main

import (
	"net/http"
	"testing"
)

// A refused sign-in says to sign in again, once.
func TestUnauthorizedSaysToSignInOnce(t *testing.T) {
	for msg, want := range map[string]string{
		"API token expired.": "API token expired (sign in again with gantry login)",
		"Not a token: use it (gantry login --server URL takes it)": "Not a token: use it (gantry login --server URL takes it)",
	} {
		if got := (&apiError{Status: http.StatusUnauthorized, Message: msg}).Error(); got != want {
			t.Errorf("%q reads %q, want %q", msg, got, want)
		}
	}
}
