// Stands in for gitleaks' `config` package in scripts/gitleaks-cases.sh: the types its rule files
// build, without the scanner behind them.
package config

import (
	"strings"

	"github.com/zricethezav/gitleaks/v8/regexp"
)

type Rule struct {
	RuleID      string
	Description string
	Entropy     float64
	SecretGroup int
	Regex       *regexp.Regexp
	Path        *regexp.Regexp
	Tags        []string
	Keywords    []string
	Allowlists  []*Allowlist
	RequiredRules []*Required
	SkipReport  bool
}
type Required struct {
	RuleID        string
	WithinLines   *int
	WithinColumns *int
}
type AllowlistMatchCondition int

const (
	AllowlistMatchOr AllowlistMatchCondition = iota
	AllowlistMatchAnd
)

type Allowlist struct {
	Description    string
	MatchCondition AllowlistMatchCondition
	Commits        []string
	Paths          []*regexp.Regexp
	RegexTarget    string
	Regexes        []*regexp.Regexp
	StopWords      []string
}
type Config struct {
	Rules map[string]Rule
	Allowlists []*Allowlist
}

func (a *Allowlist) ContainsStopWord(s string) (bool, string) {
	s = strings.ToLower(s)
	for _, w := range a.StopWords {
		if strings.Contains(s, w) {
			return true, w
		}
	}
	return false, ""
}
