module github.com/spiderenv/spider

go 1.26

require (
	github.com/spf13/pflag v1.1.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
)

require (
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
