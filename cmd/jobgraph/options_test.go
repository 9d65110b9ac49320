package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command lines of Flink's parser: options before, between and after the arguments, long
// and short forms, attached values, "--", stop's optional value and run's stop at the graph.
func TestParseOptions(t *testing.T) {
	list := findAction("list").options()
	stop := findAction("stop").options()
	runOpts := findAction("run").options()
	tests := []struct {
		name   string
		opts   []option
		stopAt bool
		args   []string
		set    []string
		values map[string]string
		rest   []string
		err    string
	}{
		{name: "none", opts: list, args: nil, set: nil, values: map[string]string{}},
		{name: "short flags", opts: list, args: []string{"-r", "-a"}, set: []string{"running", "all"}, values: map[string]string{}},
		{name: "long flags", opts: list, args: []string{"--scheduled", "--all"}, set: []string{"scheduled", "all"}, values: map[string]string{}},
		{name: "-m value", opts: list, args: []string{"-m", "h:1"}, set: []string{"jobmanager"}, values: map[string]string{"jobmanager": "h:1"}},
		{name: "-m attached", opts: list, args: []string{"-mh:1"}, set: []string{"jobmanager"}, values: map[string]string{"jobmanager": "h:1"}},
		{name: "--jobmanager value", opts: list, args: []string{"--jobmanager", "h:1"}, set: []string{"jobmanager"}, values: map[string]string{"jobmanager": "h:1"}},
		{name: "--jobmanager=value", opts: list, args: []string{"--jobmanager=h:1"}, set: []string{"jobmanager"}, values: map[string]string{"jobmanager": "h:1"}},
		{name: "last value wins", opts: list, args: []string{"-m", "a:1", "-m", "b:2"}, set: []string{"jobmanager"}, values: map[string]string{"jobmanager": "b:2"}},
		{name: "options after arguments", opts: stop, args: []string{"JOB", "-p", "/sp", "-m", "h:1"},
			set: []string{"savepointPath", "jobmanager"}, values: map[string]string{"savepointPath": "/sp", "jobmanager": "h:1"}, rest: []string{"JOB"}},
		{name: "optional value given", opts: stop, args: []string{"-p", "/sp", "JOB"},
			set: []string{"savepointPath"}, values: map[string]string{"savepointPath": "/sp"}, rest: []string{"JOB"}},
		{name: "optional value left out before an option", opts: stop, args: []string{"-p", "-m", "h:1", "JOB"},
			set: []string{"savepointPath", "jobmanager"}, values: map[string]string{"savepointPath": "", "jobmanager": "h:1"}, rest: []string{"JOB"}},
		{name: "optional value left out at the end", opts: stop, args: []string{"JOB", "--savepointPath"},
			set: []string{"savepointPath"}, values: map[string]string{"savepointPath": ""}, rest: []string{"JOB"}},
		{name: "double dash ends options", opts: list, args: []string{"--", "-r"}, values: map[string]string{}, rest: []string{"-r"}},
		{name: "lone dash is an argument", opts: list, args: []string{"-"}, values: map[string]string{}, rest: []string{"-"}},
		{name: "run stops at the graph", opts: runOpts, stopAt: true, args: []string{"-d", "g.json", "-s", "x"},
			set: []string{"detached"}, values: map[string]string{}, rest: []string{"g.json", "-s", "x"}},
		{name: "unknown short", opts: list, args: []string{"-x"}, err: "Unrecognized option: -x"},
		{name: "unknown long", opts: list, args: []string{"--xyz"}, err: "Unrecognized option: --xyz"},
		{name: "unknown attached to a flag", opts: list, args: []string{"-rx"}, err: "Unrecognized option: -rx"},
		{name: "missing value at the end", opts: list, args: []string{"-m"}, err: "Missing argument for option: m"},
		{name: "missing value before an option", opts: list, args: []string{"-m", "-r"}, err: "Missing argument for option: m"},
		{name: "value on a flag", opts: list, args: []string{"--running=yes"}, err: "Option running takes no argument: --running=yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseOptions(tt.opts, tt.args, tt.stopAt)
			if tt.err != "" {
				var ae *argsError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.err, err.Error())
				return
			}
			require.NoError(t, err)
			var set []string
			for _, o := range tt.opts {
				if p.has(o.long) {
					set = append(set, o.long)
				}
			}
			assert.ElementsMatch(t, tt.set, set)
			assert.Equal(t, tt.values, p.values)
			assert.Equal(t, tt.rest, p.args)
		})
	}
}

func TestJobManagerURL(t *testing.T) {
	tests := []struct {
		address string
		tls     bool
		want    string
		err     string
	}{
		{address: "localhost:8081", want: "http://localhost:8081"},
		{address: "127.0.0.1", want: "http://127.0.0.1:8081"},
		{address: "[::1]:9000", want: "http://[::1]:9000"},
		{address: "jm:8081", tls: true, want: "https://jm:8081"},
		{address: "https://jm:443/", want: "https://jm:443"},
		{address: "http://jm", want: "http://jm:8081"},
		{address: "http://jm:1", tls: true, err: `-m/--jobmanager "http://jm:1" names http, but TLS options were given`},
		{address: "ftp://jm:1", err: `-m/--jobmanager "ftp://jm:1" is not host:port`},
		{address: "jm:1/path", err: `-m/--jobmanager "jm:1/path" is not host:port`},
		{address: "", err: `-m/--jobmanager "" is not host:port`},
	}
	for _, tt := range tests {
		u, err := jobManagerURL(tt.address, tt.tls)
		if tt.err != "" {
			assert.EqualError(t, err, tt.err, tt.address)
			continue
		}
		if assert.NoError(t, err, tt.address) {
			assert.Equal(t, tt.want, u.String(), tt.address)
		}
	}
}
