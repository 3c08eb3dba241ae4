package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spiderenv/spider/env"
)

// registerGameFlags binds one flag per game option (env.OptionFields) to o,
// with o's values as the defaults shown: a new field of env.Options is a
// new flag of every command that makes games, with no change here.
func registerGameFlags(fs *pflag.FlagSet, o *env.Options) {
	def := env.DefaultOptions()
	for _, f := range env.OptionFields() {
		help := f.Help
		if d := f.Text(def); f.Numeric && d != "0" {
			// 0 selects the game's default everywhere, which is not
			// always the command's (train observes 8 face-up slots, play
			// has no step limit).
			help += " (0: the game's default, " + d + ")"
		}
		fs.Var(optionFlag{f, o}, f.Flag, help)
	}
}

// stepLimitNeeded rewrites the --max-steps help of a command that plays
// games to their end, where a game without a limit may never end: when,
// the case in which a negative value is refused. It panics if the help
// no longer says what it rewrites (env.Options' help for MaxSteps), so
// that every command's --help test catches a help left unchanged.
func stepLimitNeeded(fs *pflag.FlagSet, when string) {
	const unlimited = "(negative: no limit)"
	f := fs.Lookup("max-steps")
	if !strings.Contains(f.Usage, unlimited) {
		panic("cli: the --max-steps help does not say " + unlimited)
	}
	f.Usage = strings.Replace(f.Usage, unlimited, "(negative, no limit, is refused "+when+")", 1)
}

// optionFlag is one game option as a pflag.Value.
type optionFlag struct {
	f env.OptionField
	o *env.Options
}

func (v optionFlag) String() string     { return v.f.Text(*v.o) }
func (v optionFlag) Set(s string) error { return v.f.Set(v.o, s) }
func (v optionFlag) Type() string {
	switch {
	case v.f.Numeric:
		return "int"
	case v.f.Float:
		return "float"
	}
	return "string"
}

// gameRules checks the game flags' options, as a usage error in the
// flags' words.
func gameRules(o env.Options) (env.Rules, error) {
	r, err := flagRules(o)
	if err == nil && o.Shaping == env.NoShaping && o.ShapingGamma != 0 && o.ShapingGamma != 1 {
		// A discount for shaping that is off would do nothing, silently.
		return env.Rules{}, usageError{fmt.Errorf("--shaping-gamma %v needs --shaping progress", o.ShapingGamma)}
	}
	return r, err
}

// flagRules is gameRules for flags that need not say every option: train
// --resume takes the shaping from its checkpoint, and its --shaping-gamma
// alone is checked against it.
func flagRules(o env.Options) (env.Rules, error) {
	r, err := env.NewRules(o)
	if err != nil {
		return env.Rules{}, usageError{errors.New(flagWords(err.Error()))}
	}
	return r, nil
}

// flagWords says an env.Options error as a command line would: the flag
// where env names the field ("env: max_steps 2000000000 is over the
// limit" is "--max-steps 2000000000 is over the limit"), without env's
// advice for a program (a negative step limit, which the flag's help
// gives where a command takes it).
func flagWords(msg string) string {
	msg = strings.Replace(msg, " (use a negative value for no limit)", "", 1)
	for _, f := range env.OptionFields() {
		if rest, ok := strings.CutPrefix(msg, "env: "+f.Key+" "); ok {
			return "--" + f.Flag + " " + rest
		}
	}
	return msg
}
