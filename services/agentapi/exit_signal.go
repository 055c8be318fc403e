package agentapi

// exitSignals are the signals a job is usually ended by, by number (Linux's numbering,
// which is where agents run).
var exitSignals = map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
	14: "SIGALRM", 15: "SIGTERM"}

// ExitSignal names the signal that an exit code of 128+n says ended a job (a container
// runtime and a shell report a process killed by signal n so): "SIGTERM" for 143. It is
// "" for any other code, and for a signal a job is seldom ended by, whose 128+n is more
// likely a code the job chose.
func ExitSignal(code int) string {
	return exitSignals[code-128]
}
