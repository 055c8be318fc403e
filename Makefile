# The two commands a newcomer needs are `make run` and `make test`.
.PHONY: run test lint bench build generate screenshots

run:
	go run ./cmd/gantry serve

test:
	scripts/test.sh

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$'))"
	go vet ./...

bench:
	go test -run '^$$' -bench . -benchmem ./...

build:
	go build -o bin/gantry ./cmd/gantry

generate:
	go tool templ generate

screenshots:
	GANTRY_SCREENSHOTS=$(CURDIR)/docs/screenshots go test -count=1 -run 'InBrowser' ./...
