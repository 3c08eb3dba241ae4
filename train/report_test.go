package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
}
