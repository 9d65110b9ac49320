package main

import (
	"fmt"
	"strings"
)

// option is one command line option, as Apache Commons CLI (which Flink's CliFrontendParser
// uses) declares it: a short and a long name, whether it takes a value, and whether that value
// may be left out.
type option struct {
	short, long string
	arg         string // the value's name in the help; "" for a flag without a value
	optionalArg bool   // the value may be left out (Flink's stop -p/--savepointPath)
	help        string
}

// takesArg says whether o has a value.
func (o option) takesArg() bool { return o.arg != "" }

// parsed is a parsed command line: the options given (by long name) with their values, and the
// remaining positional arguments in order.
type parsed struct {
	set    map[string]bool
	values map[string]string
	args   []string
}

func (p parsed) has(long string) bool     { return p.set[long] }
func (p parsed) value(long string) string { return p.values[long] }

// argsError is a wrong command line: the message says what is wrong; the action's help is
// pointed to (Flink's CliArgsException).
type argsError struct{ msg string }

func (e *argsError) Error() string { return e.msg }

func argsErrorf(format string, a ...any) error { return &argsError{fmt.Sprintf(format, a...)} }

// parseOptions reads args against opts as Commons CLI's DefaultParser does for Flink: options
// may come before, between and after the positional arguments ("-m host:port", "-mhost:port",
// "--jobmanager host:port", "--jobmanager=host:port"); "--" ends the options; a lone "-" is a
// positional argument. With stopAtNonOption (Flink's run and info) the first positional argument
// ends the options and everything after it is positional. An option given twice keeps its last
// value. Errors name the option as Commons CLI does ("Unrecognized option: -x", "Missing
// argument for option: m").
func parseOptions(opts []option, args []string, stopAtNonOption bool) (parsed, error) {
	p := parsed{set: map[string]bool{}, values: map[string]string{}}
	find := func(name string, long bool) (option, bool) {
		for _, o := range opts {
			if (long && o.long == name) || (!long && o.short == name) {
				return o, true
			}
		}
		return option{}, false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.args = append(p.args, args[i+1:]...)
			return p, nil
		case len(a) < 2 || a[0] != '-':
			if stopAtNonOption {
				p.args = append(p.args, args[i:]...)
				return p, nil
			}
			p.args = append(p.args, a)
			continue
		}
		var o option
		var value string
		hasValue := false
		if strings.HasPrefix(a, "--") {
			name := a[2:]
			if k := strings.IndexByte(name, '='); k >= 0 {
				name, value, hasValue = name[:k], name[k+1:], true
			}
			var ok bool
			if o, ok = find(name, true); !ok {
				return p, argsErrorf("Unrecognized option: %s", a)
			}
		} else {
			// A short option: the whole name ("-type"), or a one-letter name with its value
			// attached ("-mhost:port").
			var ok bool
			if o, ok = find(a[1:], false); !ok {
				if o, ok = find(a[1:2], false); !ok || !o.takesArg() {
					return p, argsErrorf("Unrecognized option: %s", a)
				}
				value, hasValue = strings.TrimPrefix(a[2:], "="), true
			}
		}
		if !o.takesArg() {
			if hasValue {
				return p, argsErrorf("Option %s takes no argument: %s", o.long, a)
			}
			p.set[o.long] = true
			continue
		}
		if !hasValue && i+1 < len(args) && (o.optionalArg && !strings.HasPrefix(args[i+1], "-") ||
			!o.optionalArg && (!strings.HasPrefix(args[i+1], "-") || args[i+1] == "-")) {
			i++
			value, hasValue = args[i], true
		}
		if !hasValue && !o.optionalArg {
			return p, argsErrorf("Missing argument for option: %s", o.short)
		}
		p.set[o.long] = true
		p.values[o.long] = value
	}
	return p, nil
}
