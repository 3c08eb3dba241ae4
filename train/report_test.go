package train

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMetricsAndCurve(t *testing.T) {
	h := []Metrics{{Phase: "clone", MeanRuns: 4.5, Finished: 10}}
	for i := 1; i <= 30; i++ {
		h = append(h, Metrics{Iter: i, Phase: "ppo", EnvSteps: int64(i * 100), Finished: i % 3, MeanRuns: float64(i) / 10, MeanReturn: -float64(i)})
	}
	var csv, jl bytes.Buffer
	if err := WriteMetrics(&csv, h, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 32 || lines[0] != strings.Join(metricsHeader, ",") || !strings.HasPrefix(lines[31], "30,ppo,3000,") {
		t.Fatalf("csv: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if err := WriteMetrics(&jl, h, true); err != nil {
		t.Fatal(err)
	}
	var m Metrics
	rows := strings.Split(strings.TrimSpace(jl.String()), "\n")
	if err := json.Unmarshal([]byte(rows[5]), &m); err != nil || len(rows) != 31 || m.Iter != 5 || m.EnvSteps != 500 {
		t.Fatalf("jsonl: %d rows, row 5 %+v, %v", len(rows), m, err)
	}
	path := filepath.Join(t.TempDir(), "c.png")
	if err := SaveCurve(path, h, "test"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatal("the curve is not a PNG")
	}
	if err := SaveCurve(path, h[:1], "test"); !errors.Is(err, ErrNoEpisodes) {
		t.Fatalf("a curve without PPO episodes: %v, want ErrNoEpisodes", err)
	}
	// An axis whose width is not finite (from -9e307 to 9e307) is refused
	// at once: gonum/plot's ticks looped on it without end.
	wide := append([]Metrics(nil), h...)
	wide[10].ValGames, wide[10].ValRuns = 4, 9e307
	wide[20].ValGames, wide[20].ValRuns = 4, -9e307
	done := make(chan error, 1)
	go func() { done <- SaveCurve(path, wide, "test") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "too large to plot") {
			t.Fatalf("a curve over an axis of infinite width: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a curve over an axis of infinite width did not return")
	}
}

// TestMetricsCSVColumnsAreTheirFields writes one line of metrics whose
// every field holds its own value and reads each column back by its
// header's name: the CSV must hold under each name the value JSON lines
// write under it.
func TestMetricsCSVColumnsAreTheirFields(t *testing.T) {
	m := Metrics{Iter: 1, Phase: "dagger", EnvSteps: 2, Episodes: 3, MeanReturn: 4, WinRate: 5, MeanRuns: 6, Finished: 7,
		PolicyLoss: 8, ValueLoss: 9, Entropy: 10, EnvStepsPerS: 11, UpdatesPerS: 12, EnvSeconds: 13, ActSeconds: 14,
		LearnSeconds: 15, ElapsedSecond: 16, ValGames: 17, ValWinRate: 18, ValRuns: 19, ValSeconds: 20, Round: 21,
		Labels: 22, Agreement: 23, LabelSeconds: 24}
	var c, j bytes.Buffer
	if err := WriteMetrics(&c, []Metrics{m}, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetrics(&j, []Metrics{m}, true); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&c).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	var want map[string]any
	if err := json.Unmarshal(j.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if len(rows[0]) != len(want) {
		t.Fatalf("csv has %d columns, JSON lines %d fields", len(rows[0]), len(want))
	}
	for i, name := range rows[0] {
		if got, w := rows[1][i], fmt.Sprint(want[name]); got != w {
			t.Errorf("csv column %q holds %s; want %s", name, got, w)
		}
	}
}

// TestCurveWindowIsTwentyIterations plots one PPO iteration's episodes
// followed by iterations without any: the iteration 20 after them
// averages nothing and draws no point, so the curve with it is the curve
// without it, pixel for pixel (the axes span the points drawn).
func TestCurveWindowIsTwentyIterations(t *testing.T) {
	var h []Metrics
	for i := range curveWindow + 1 {
		m := Metrics{Iter: i + 1, Phase: "ppo", EnvSteps: int64(100 * (i + 1))}
		if i == 0 {
			m.Finished, m.MeanRuns, m.MeanReturn = 4, 2, 150
		}
		h = append(h, m)
	}
	dir := t.TempDir()
	curve := func(h []Metrics) []byte {
		path := filepath.Join(dir, "c.png")
		if err := SaveCurve(path, h, "window"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(curve(h), curve(h[:curveWindow])) {
		t.Fatalf("iteration %d, %d after the last episodes, changed the curve: its window is over %d iterations", curveWindow+1, curveWindow, curveWindow)
	}
	// The curve does see an iteration within the window.
	h[curveWindow-1].Finished, h[curveWindow-1].MeanRuns = 4, 3
	if bytes.Equal(curve(h[:curveWindow]), curve(h[:curveWindow-1])) {
		t.Fatal("the curve did not change with episodes in its last iteration: the test sees nothing")
	}
}
