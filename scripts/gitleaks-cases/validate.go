// Replaces gitleaks' `utils.Validate` in scripts/gitleaks-cases.sh: records each rule's test
// strings instead of running them.
package utils

import (
	"slices"

	"github.com/zricethezav/gitleaks/v8/config"
)

// Cases is one rule's test strings, as its Go file validates them.
type Cases struct {
	Rule  string            `json:"rule"`
	TPs   []string          `json:"tps"`
	FPs   []string          `json:"fps"`
	PathTPs map[string]string `json:"path_tps,omitempty"`
	PathFPs map[string]string `json:"path_fps,omitempty"`
}

var Dump []Cases

func Validate(rule config.Rule, truePositives []string, falsePositives []string) *config.Rule {
	// Sorted: gitleaks builds some of them from a map, whose order changes from run to run.
	tps, fps := slices.Clone(truePositives), slices.Clone(falsePositives)
	slices.Sort(tps)
	slices.Sort(fps)
	Dump = append(Dump, Cases{Rule: rule.RuleID, TPs: tps, FPs: fps})
	return &rule
}

func ValidateWithPaths(rule config.Rule, truePositives map[string]string, falsePositives map[string]string) *config.Rule {
	Dump = append(Dump, Cases{Rule: rule.RuleID, PathTPs: truePositives, PathFPs: falsePositives})
	return &rule
}
