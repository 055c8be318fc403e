// Package web assembles the HTTP server: the route table, the middleware chain
// (request id, logging, recovery) and graceful shutdown.
package web
