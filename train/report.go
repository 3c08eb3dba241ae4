package train

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/spiderenv/spider/env"
	"github.com/spiderenv/spider/internal/atomicfile"
)

// Metrics is one phase's line of the training log: a PPO iteration, the
// warm start (Phase "clone") or a DAgger round (Phase "dagger"), with its
// validation if one ran.
type Metrics struct {
	Iter          int     `msgpack:"iter" json:"iter"`
	Phase         string  `msgpack:"phase" json:"phase"` // "clone", "dagger" or "ppo"
	EnvSteps      int64   `msgpack:"env_steps" json:"env_steps"`
	Episodes      int64   `msgpack:"episodes" json:"episodes"`
	MeanReturn    float64 `msgpack:"mean_return" json:"mean_return"` // score change per finished episode
	WinRate       float64 `msgpack:"win_rate" json:"win_rate"`
	MeanRuns      float64 `msgpack:"mean_runs" json:"mean_runs"`
	Finished      int     `msgpack:"finished" json:"finished"` // episodes behind the three means
	PolicyLoss    float64 `msgpack:"policy_loss" json:"policy_loss"`
	ValueLoss     float64 `msgpack:"value_loss" json:"value_loss"`
	Entropy       float64 `msgpack:"entropy" json:"entropy"`
	EnvStepsPerS  float64 `msgpack:"env_steps_per_s" json:"env_steps_per_s"`
	UpdatesPerS   float64 `msgpack:"updates_per_s" json:"updates_per_s"`
	EnvSeconds    float64 `msgpack:"env_s" json:"env_s"`     // stepping the games
	ActSeconds    float64 `msgpack:"act_s" json:"act_s"`     // the network choosing actions
	LearnSeconds  float64 `msgpack:"learn_s" json:"learn_s"` // gradients and updates
	ElapsedSecond float64 `msgpack:"elapsed_s" json:"elapsed_s"`
	// ValGames is the number of validation deals the greedy network played
	// after this phase (0: not validated then); ValWinRate and ValRuns are
	// its win rate and mean completed runs on them.
	ValGames   int     `msgpack:"val_games" json:"val_games"`
	ValWinRate float64 `msgpack:"val_win_rate" json:"val_win_rate"`
	ValRuns    float64 `msgpack:"val_runs" json:"val_runs"`
	ValSeconds float64 `msgpack:"val_s" json:"val_s"` // validating, counted in ElapsedSecond
	// Imitation phases ("clone" and "dagger"): Round is the DAgger round
	// (from 1), Labels the rows trained on (all rounds so far), Agreement
	// how often the network's move in its own games was the teacher's
	// label, LabelSeconds the time spent playing and labelling.
	Round        int     `msgpack:"round" json:"round"`
	Labels       int     `msgpack:"labels" json:"labels"`
	Agreement    float64 `msgpack:"agreement" json:"agreement"`
	LabelSeconds float64 `msgpack:"label_s" json:"label_s"`
	// ApproxKL and ClipFrac (PPO iterations; the CSV has them after
	// entropy) are the mean over the updates of (ratio-1) - log ratio, an
	// estimate of the KL divergence of the updated policy from the
	// rollout's, and of the share of rows whose probability ratio was
	// clipped: a learning rate too high shows in both (CleanRL's approx_kl
	// and clipfrac).
	ApproxKL float64 `msgpack:"approx_kl" json:"approx_kl"`
	ClipFrac float64 `msgpack:"clip_frac" json:"clip_frac"`
	// LR is the learning rate of a PPO iteration's updates (AnnealLR
	// lowers it), and Updates the number of its minibatch updates: fewer
	// than Epochs times the minibatches of a rollout when TargetKL ended
	// the iteration early.
	LR      float64 `msgpack:"lr" json:"lr"`
	Updates int     `msgpack:"updates" json:"updates"`
}

// plausible reports whether m's numbers are ones a run can produce:
// finite, counts and times not negative, rates within 0 and 1, runs
// within 0 and env.NumRuns, and a return within maxReturn. A history
// read back from a file is checked with it: it is plotted at every save,
// and a value past these (an axis from -9e307 to 9e307, whose width
// overflows) had the plot hang.
func (m Metrics) plausible() bool {
	for _, v := range []float64{m.MeanReturn, m.WinRate, m.MeanRuns, m.PolicyLoss, m.ValueLoss, m.Entropy, m.ApproxKL, m.ClipFrac, m.LR, m.EnvStepsPerS,
		m.UpdatesPerS, m.EnvSeconds, m.ActSeconds, m.LearnSeconds, m.ElapsedSecond, m.ValWinRate, m.ValRuns, m.ValSeconds,
		m.Agreement, m.LabelSeconds} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	for _, n := range []int64{int64(m.Iter), m.EnvSteps, m.Episodes, int64(m.Finished), int64(m.ValGames), int64(m.Round), int64(m.Labels), int64(m.Updates)} {
		if n < 0 {
			return false
		}
	}
	for _, v := range []float64{m.EnvStepsPerS, m.UpdatesPerS, m.EnvSeconds, m.ActSeconds, m.LearnSeconds, m.ElapsedSecond, m.ValSeconds, m.LabelSeconds, m.Entropy, m.ValueLoss, m.LR} {
		if v < 0 {
			return false
		}
	}
	for _, v := range []float64{m.WinRate, m.ValWinRate, m.Agreement, m.ClipFrac} {
		if v < 0 || v > 1 {
			return false
		}
	}
	return m.MeanRuns >= 0 && m.MeanRuns <= env.NumRuns && m.ValRuns >= 0 && m.ValRuns <= env.NumRuns &&
		math.Abs(m.MeanReturn) <= maxReturn
}

// maxReturn bounds an episode's return, far beyond any game's: a score
// moves by at most a few hundred points a move, and a game has at most
// 2^30 moves.
const maxReturn = 1e15

// BetterValidation reports whether a's validation beats b's: a was
// validated and b was not, or a won more, or as many with more runs.
func BetterValidation(a, b Metrics) bool {
	switch {
	case a.ValGames == 0:
		return false
	case b.ValGames == 0:
		return true
	}
	return a.ValWinRate > b.ValWinRate || a.ValWinRate == b.ValWinRate && a.ValRuns > b.ValRuns
}

// NewBest reports whether the last phase of history was validated and
// beat every earlier validation: the network is the run's best so far.
func NewBest(history []Metrics) bool {
	if len(history) == 0 {
		return false
	}
	m := history[len(history)-1]
	for _, h := range history[:len(history)-1] {
		if !BetterValidation(m, h) {
			return false
		}
	}
	return m.ValGames > 0
}

// ErrNoEpisodes is SaveCurve's answer before any PPO episode has ended.
var ErrNoEpisodes = errors.New("train: no finished episode to plot yet")

// curveWindow is the number of iterations each point of the curve averages.
const curveWindow = 20

// metricsHeader is the CSV header, in Metrics field order but for
// approx_kl, clip_frac, lr and updates, which follow entropy.
var metricsHeader = []string{"iter", "phase", "env_steps", "episodes", "mean_return", "win_rate", "mean_runs", "finished",
	"policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac", "lr", "updates", "env_steps_per_s", "updates_per_s", "env_s", "act_s", "learn_s", "elapsed_s",
	"val_games", "val_win_rate", "val_runs", "val_s", "round", "labels", "agreement", "label_s"}

// WriteMetrics writes history as CSV (jsonl false) or JSON lines.
func WriteMetrics(w io.Writer, history []Metrics, jsonl bool) error {
	if jsonl {
		enc := json.NewEncoder(w)
		for _, m := range history {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		return nil
	}
	cw := csv.NewWriter(w)
	cw.Write(metricsHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, m := range history {
		cw.Write([]string{strconv.Itoa(m.Iter), m.Phase, strconv.FormatInt(m.EnvSteps, 10), strconv.FormatInt(m.Episodes, 10),
			f(m.MeanReturn), f(m.WinRate), f(m.MeanRuns), strconv.Itoa(m.Finished), f(m.PolicyLoss), f(m.ValueLoss), f(m.Entropy),
			f(m.ApproxKL), f(m.ClipFrac), f(m.LR), strconv.Itoa(m.Updates), f(m.EnvStepsPerS), f(m.UpdatesPerS), f(m.EnvSeconds), f(m.ActSeconds), f(m.LearnSeconds), f(m.ElapsedSecond),
			strconv.Itoa(m.ValGames), f(m.ValWinRate), f(m.ValRuns), f(m.ValSeconds),
			strconv.Itoa(m.Round), strconv.Itoa(m.Labels), f(m.Agreement), f(m.LabelSeconds)})
	}
	cw.Flush()
	return cw.Error()
}

// SaveMetrics writes history to path (through a temporary file).
func SaveMetrics(path string, history []Metrics, jsonl bool) error {
	var b bytes.Buffer
	if err := WriteMetrics(&b, history, jsonl); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes())
}

// SaveCurve plots the PPO iterations' completed runs and return (score
// change per episode, divided by 100) against environment steps, as a PNG
// at path. Games are dealt together and most end at the step limit
// together, so a single iteration's mean is noisy: each point averages the
// episodes that ended in the last 20 iterations (curveWindow). The warm start's
// teacher is drawn as a dashed level for reference, and the validations
// of the greedy network (the warm start's at 0 steps) as points.
func SaveCurve(path string, history []Metrics, title string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "environment steps"
	p.Y.Label.Text = fmt.Sprintf("per episode (episodes of the last %d iterations)", curveWindow)
	var runs, ret, valRuns, valWins plotter.XYs
	teacher := -1.0
	var ppo []Metrics
	for _, m := range history {
		if m.ValGames > 0 {
			valRuns = append(valRuns, plotter.XY{X: float64(m.EnvSteps), Y: m.ValRuns})
			valWins = append(valWins, plotter.XY{X: float64(m.EnvSteps), Y: m.ValWinRate})
		}
		if m.Phase == "clone" {
			teacher = m.MeanRuns
		}
		if m.Phase != "ppo" {
			continue
		}
		ppo = append(ppo, m)
	}
	for i, m := range ppo {
		var n, sr, st float64
		for _, w := range ppo[max(0, i-curveWindow+1) : i+1] {
			n += float64(w.Finished)
			sr += w.MeanRuns * float64(w.Finished)
			st += w.MeanReturn * float64(w.Finished)
		}
		if n == 0 {
			continue
		}
		runs = append(runs, plotter.XY{X: float64(m.EnvSteps), Y: sr / n})
		ret = append(ret, plotter.XY{X: float64(m.EnvSteps), Y: st / n / 100})
	}
	if len(runs) == 0 {
		return ErrNoEpisodes
	}
	if !plottable(runs, ret, valRuns, valWins, plotter.XYs{{X: runs[0].X, Y: max(teacher, 0)}}) {
		return errors.New("train: the history holds numbers too large to plot (the widths of the curve's axes are not finite)")
	}
	lr, err := plotter.NewLine(runs)
	if err != nil {
		return err
	}
	lr.Color = plotColor(0)
	lt, err := plotter.NewLine(ret)
	if err != nil {
		return err
	}
	lt.Color = plotColor(1)
	p.Add(lr, lt, plotter.NewGrid())
	p.Legend.Add("completed runs", lr)
	p.Legend.Add("return / 100", lt)
	if teacher >= 0 {
		lg, err := plotter.NewLine(plotter.XYs{{X: runs[0].X, Y: teacher}, {X: runs[len(runs)-1].X, Y: teacher}})
		if err == nil {
			lg.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
			lg.Color = plotColor(2)
			p.Add(lg)
			p.Legend.Add("warm-start teacher's runs", lg)
		}
	}
	for i, v := range []struct {
		xy   plotter.XYs
		name string
	}{{valRuns, "validation: runs (greedy network)"}, {valWins, "validation: win rate"}} {
		if len(v.xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(v.xy)
		if err != nil {
			return err
		}
		l.Color, s.Color = plotColor(3+i), plotColor(3+i)
		p.Add(l, s)
		p.Legend.Add(v.name, l, s)
	}
	p.Legend.Top = true
	w, err := p.WriterTo(8*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes())
}

// plottable reports whether every point of the series is finite and so
// are the widths of the axes they span: gonum/plot's ticks loop without
// end over an axis of infinite width.
func plottable(series ...plotter.XYs) bool {
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for _, xys := range series {
		for _, p := range xys {
			for i, v := range [2]float64{p.X, p.Y} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
				lo[i], hi[i] = min(lo[i], v), max(hi[i], v)
			}
		}
	}
	for i := range lo {
		if w := hi[i] - lo[i]; lo[i] <= hi[i] && math.IsInf(w, 0) {
			return false
		}
	}
	return true
}

func plotColor(i int) color.Color {
	return []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}[i]
}
