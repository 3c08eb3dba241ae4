module github.com/spiderenv/spider

go 1.26

require github.com/spf13/pflag v1.1.0
