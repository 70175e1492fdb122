#include "calibration/fit_runs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "models/model_stats.h"

namespace strata::calibration {

namespace {

using costmodel::kLossParameters;
using costmodel::loss_parameters;
using costmodel::TrainingLosses;
using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

// A double-quoted YAML scalar (JSON's string escapes are YAML's).
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

const costmodel::LossParameter& spec(int j) { return loss_parameters()[static_cast<std::size_t>(j)]; }

// Solves A x = b (A small and symmetric positive definite in practice) by Gaussian
// elimination with partial pivoting; false when A is singular.
bool solve(Mat a, Vec b, Vec* x) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (!(std::fabs(a[p][c]) > 1e-300)) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x->assign(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t k = i + 1; k < n; ++k) s -= a[i][k] * (*x)[k];
    (*x)[i] = s / a[i][i];
  }
  return true;
}

bool invert(const Mat& a, Mat* inv) {
  const std::size_t n = a.size();
  inv->assign(n, Vec(n, 0.0));
  for (std::size_t c = 0; c < n; ++c) {
    Vec e(n, 0.0), x;
    e[c] = 1.0;
    if (!solve(a, e, &x)) return false;
    for (std::size_t r = 0; r < n; ++r) (*inv)[r][c] = x[r];
  }
  return true;
}

// The fit over one set of rows: the state Levenberg-Marquardt works on.
class MapFit {
 public:
  MapFit(const std::vector<const MeasuredRun*>& rows, const FitOptions& o) : rows_(rows), o_(o) {}

  // Log residuals of the rows (unweighted) at `t`.
  Vec log_residuals(const TrainingLosses& t) const {
    Vec r;
    r.reserve(rows_.size());
    for (const MeasuredRun* run : rows_) r.push_back(std::log(predict_run_s(*run, t) / run->measured_s));
    return r;
  }

  double cost(const Vec& res, const TrainingLosses& t, const std::vector<int>& active) const {
    double c = 0;
    for (double x : res) c += (x / o_.row_sigma) * (x / o_.row_sigma);
    for (int j : active) {
      const double z = (t.value[static_cast<std::size_t>(j)] - spec(j).prior) / spec(j).prior_sd;
      c += z * z;
    }
    return c;
  }

  // d(log residual) / d(parameter j) at t, one column per active parameter.
  Mat jacobian(const TrainingLosses& t, const Vec& res, const std::vector<int>& active) const {
    Mat jac(active.size());
    for (std::size_t a = 0; a < active.size(); ++a) {
      const int j = active[a];
      const auto ju = static_cast<std::size_t>(j);
      TrainingLosses u = t;
      double h = 0.05 * spec(j).prior_sd;
      if (u.value[ju] + h > spec(j).hi) h = -h;  // step inside the range
      u.value[ju] += h;
      const Vec ru = log_residuals(u);
      jac[a].resize(res.size());
      for (std::size_t i = 0; i < res.size(); ++i) jac[a][i] = (ru[i] - res[i]) / h;
    }
    return jac;
  }

  // Gauss-Newton normal matrix of the weighted problem (data + prior terms).
  Mat normal(const Mat& jac, const std::vector<int>& active) const {
    const std::size_t k = active.size();
    Mat n(k, Vec(k, 0.0));
    const double w = 1.0 / (o_.row_sigma * o_.row_sigma);
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = 0; b < k; ++b)
        for (std::size_t i = 0; i < jac[a].size(); ++i) n[a][b] += w * jac[a][i] * jac[b][i];
      const double sd = spec(active[a]).prior_sd;
      n[a][a] += 1.0 / (sd * sd);
    }
    return n;
  }

  Vec gradient(const Mat& jac, const Vec& res, const TrainingLosses& t, const std::vector<int>& active) const {
    Vec g(active.size(), 0.0);
    const double w = 1.0 / (o_.row_sigma * o_.row_sigma);
    for (std::size_t a = 0; a < active.size(); ++a) {
      for (std::size_t i = 0; i < res.size(); ++i) g[a] += w * jac[a][i] * res[i];
      const int j = active[a];
      g[a] += (t.value[static_cast<std::size_t>(j)] - spec(j).prior) / (spec(j).prior_sd * spec(j).prior_sd);
    }
    return g;
  }

  // Bounded Levenberg-Marquardt from t; returns the iterations taken.
  int minimise(TrainingLosses* t, const std::vector<int>& active) const {
    if (active.empty()) return 0;
    Vec res = log_residuals(*t);
    double c = cost(res, *t, active);
    double lambda = 1e-2;
    int it = 0;
    for (; it < o_.max_iterations; ++it) {
      const Mat jac = jacobian(*t, res, active);
      Mat n = normal(jac, active);
      const Vec g = gradient(jac, res, *t, active);
      bool improved = false;
      for (int tries = 0; tries < 8 && !improved; ++tries) {
        Mat damped = n;
        for (std::size_t a = 0; a < active.size(); ++a) damped[a][a] *= 1.0 + lambda;
        Vec neg_g(g.size()), step;
        for (std::size_t a = 0; a < g.size(); ++a) neg_g[a] = -g[a];
        if (!solve(damped, neg_g, &step)) break;
        TrainingLosses trial = *t;
        for (std::size_t a = 0; a < active.size(); ++a) {
          const int j = active[a];
          auto& v = trial.value[static_cast<std::size_t>(j)];
          v = std::clamp(v + step[a], spec(j).lo, spec(j).hi);
        }
        const Vec tr = log_residuals(trial);
        const double tc = cost(tr, trial, active);
        if (tc < c) {
          const double gain = c - tc;
          *t = trial, res = tr, c = tc, improved = true;
          lambda = std::max(1e-6, lambda / 3);
          if (gain < 1e-6 * (1 + c)) return it + 1;
        } else {
          lambda *= 4;
        }
      }
      if (!improved) break;
    }
    return it;
  }

 private:
  std::vector<const MeasuredRun*> rows_;
  const FitOptions& o_;
};

TrainingLosses prior_losses(bool gemm_measured) {
  TrainingLosses t;
  t.present = true;
  for (int j = 0; j < kLossParameters; ++j) {
    const auto ju = static_cast<std::size_t>(j);
    t.value[ju] = spec(j).prior;
    t.status[ju] = "prior";
  }
  if (gemm_measured) t.value[0] = 1.0, t.status[0] = "measured";
  return t;
}

struct FitCore {
  TrainingLosses losses;
  std::vector<int> active;
  std::vector<std::string> notes;
  int iterations = 0;
};

// Chooses the active parameters, minimises, and fills errors and statuses.
FitCore fit_rows(const std::vector<const MeasuredRun*>& rows, const FitOptions& o, bool gemm_measured) {
  FitCore f;
  f.losses = prior_losses(gemm_measured);
  const MapFit fit(rows, o);
  const Vec res0 = fit.log_residuals(f.losses);
  std::vector<int> candidates;
  for (int j = 0; j < kLossParameters; ++j) {
    if (j == 0 && gemm_measured) continue;
    if (std::find(o.freeze.begin(), o.freeze.end(), spec(j).name) != o.freeze.end()) {
      f.notes.push_back(fmt::format("{} frozen at its prior ({}) by --freeze", spec(j).name, spec(j).prior));
      continue;
    }
    candidates.push_back(j);
  }
  // How much one prior sd of each parameter moves the rows, in row_sigma units.
  const Mat jac0 = fit.jacobian(f.losses, res0, candidates);
  std::vector<std::pair<double, int>> telling;
  for (std::size_t a = 0; a < candidates.size(); ++a) {
    double n2 = 0;
    for (double d : jac0[a]) n2 += d * d;
    const double s = std::sqrt(n2) * spec(candidates[a]).prior_sd / o.row_sigma;
    if (s > 0.5) telling.push_back({s, candidates[a]});
    else f.notes.push_back(fmt::format("{} stays at its prior: the rows hardly depend on it", spec(candidates[a]).name));
  }
  std::sort(telling.rbegin(), telling.rend());
  const std::size_t room = rows.size() / static_cast<std::size_t>(std::max(1, o.rows_per_parameter));
  for (std::size_t a = 0; a < telling.size(); ++a) {
    if (a < room) f.active.push_back(telling[a].second);
    else f.notes.push_back(fmt::format("{} stays at its prior: {} rows fit at most {} parameter(s) ({} rows each)",
                                       spec(telling[a].second).name, rows.size(), room, o.rows_per_parameter));
  }
  std::sort(f.active.begin(), f.active.end());
  f.iterations = fit.minimise(&f.losses, f.active);

  // Posterior covariance at the optimum, scaled by the residual variance when it is larger.
  const Vec res = fit.log_residuals(f.losses);
  const Mat jac = fit.jacobian(f.losses, res, f.active);
  Mat cov;
  if (!f.active.empty() && invert(fit.normal(jac, f.active), &cov)) {
    double rss = 0;
    for (double x : res) rss += x * x;
    const double dof = static_cast<double>(res.size()) - static_cast<double>(f.active.size());
    const double scale = dof > 0 ? std::max(1.0, rss / dof / (o.row_sigma * o.row_sigma)) : 1.0;
    for (std::size_t a = 0; a < f.active.size(); ++a) {
      const auto ju = static_cast<std::size_t>(f.active[a]);
      f.losses.std_error[ju] = std::sqrt(std::max(0.0, cov[a][a] * scale));
      f.losses.status[ju] = "fitted";
      const auto& p = spec(f.active[a]);
      const double v = f.losses.value[ju], eps = 1e-4 * (p.hi - p.lo);
      if (v <= p.lo + eps || v >= p.hi - eps) {
        f.losses.status[ju] = "at_bound";
        f.notes.push_back(fmt::format("{} ended on its bound ({} {}): a mechanism the model lacks, not a value",
                                      p.name, v, p.unit));
      }
      for (std::size_t b = a + 1; b < f.active.size(); ++b) {
        const double rho = cov[a][b] / std::sqrt(cov[a][a] * cov[b][b]);
        if (std::fabs(rho) > 0.95)
          f.notes.push_back(fmt::format("{} and {} are collinear on these rows (posterior correlation {:+.2f}): "
                                        "the rows cannot tell them apart, their priors decide",
                                        p.name, spec(f.active[b]).name, rho));
      }
    }
  }
  return f;
}

// A row's fields; `p`: any prediction of the run (its MFU times its step time is the run's
// model FLOPs, whatever the losses).
RowFit row_fit(const MeasuredRun& r, const planner::Prediction& p) {
  RowFit f;
  f.id = r.id, f.source = r.source, f.sweep = r.sweep, f.fit = r.fit, f.measured_s = r.measured_s;
  f.stack = r.stack.name, f.device = r.cluster.device.name;
  f.params_b = models::total_params(r.model) / 1e9;
  f.gpus = r.strategy.gpus(), f.seq = r.model.seq_len;
  f.fp8 = r.strategy.precision == "fp8";  // stacks run 16 or 32 bits; FP8 is the strategy's
  f.moe = r.model.moe.has_value();
  f.measured_mfu = p.mfu * p.iteration_s / r.measured_s;  // MFU scales with 1 / step time
  return f;
}

SweepCheck check_sweep(const std::string& name, const std::vector<double>& measured, const std::vector<double>& pred) {
  SweepCheck s;
  s.sweep = name;
  s.points = static_cast<int>(measured.size());
  s.kendall_tau = kendall_tau(measured, pred);
  const auto best_m = std::min_element(measured.begin(), measured.end()) - measured.begin();
  const double best_p = *std::min_element(pred.begin(), pred.end());
  s.best_gap = pred[static_cast<std::size_t>(best_m)] / best_p - 1.0;
  return s;
}

// Sweeps among `rows` (2+ points), predicted by `pred` (same order as rows).
std::vector<SweepCheck> check_sweeps(const std::vector<RowFit>& rows, const std::vector<double>& pred,
                                     const std::string& only_source = "") {
  std::map<std::string, std::pair<Vec, Vec>> by;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].sweep.empty() || !(pred[i] > 0)) continue;
    if (!only_source.empty() && rows[i].source != only_source) continue;
    by[rows[i].sweep].first.push_back(rows[i].measured_s);
    by[rows[i].sweep].second.push_back(pred[i]);
  }
  std::vector<SweepCheck> out;
  for (const auto& [name, mp] : by)
    if (mp.first.size() >= 2) out.push_back(check_sweep(name, mp.first, mp.second));
  return out;
}

}  // namespace

void ErrorSummary::add(double err) {
  mape = (mape * rows + std::fabs(err)) / (rows + 1);
  bias = (bias * rows + err) / (rows + 1);
  if (std::fabs(err) > std::fabs(worst)) worst = err;
  ++rows;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  // Pairs tied in either series (a figure that shows two layouts equally fast) say nothing
  // about the order and are left out; NaN when no pair is left.
  double s = 0, pairs = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const double x = (a[i] - a[j]) * (b[i] - b[j]);
      if (x == 0) continue;
      s += x > 0 ? 1 : -1;
      pairs += 1;
    }
  return pairs > 0 ? s / pairs : std::numeric_limits<double>::quiet_NaN();
}

FitResult fit_training_losses(const std::vector<MeasuredRun>& runs, const FitOptions& o) {
  if (!(o.row_sigma > 0) || o.rows_per_parameter < 1) input_error("fit options: row_sigma > 0 and rows_per_parameter >= 1");
  for (const auto& name : o.freeze)
    if (costmodel::loss_parameter_index(name) < 0) input_error("--freeze: '{}' is not a training-loss parameter", name);
  FitResult out;
  std::vector<const MeasuredRun*> fit_rows_all;
  std::set<std::string> devices;
  for (const auto& r : runs) {
    devices.insert(r.cluster.device.name);
    if (r.fit) fit_rows_all.push_back(&r);
  }
  if (devices.size() > 1) {
    std::string list;
    for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
    input_error("the runs were measured on {} devices ({}): a profile describes one device; fit each device's "
                "runs on their own", devices.size(), list);
  }
  if (fit_rows_all.size() < 3)
    input_error("calibrate --from-runs needs at least 3 runs to fit (`use: fit`), got {}: with fewer, every "
                "parameter would only repeat its prior",
                fit_rows_all.size());
  out.device = *devices.begin();
  const bool gemm_measured = runs.front().cluster.device.gemm_table_sustained();
  auto say = [&](const std::string& s) { if (o.progress) o.progress(s); };

  say(fmt::format("fitting {} rows on {}", fit_rows_all.size(), out.device));
  FitCore all = fit_rows(fit_rows_all, o, gemm_measured);
  out.losses = all.losses;
  out.notes = all.notes;
  out.iterations = all.iterations;
  const TrainingLosses neutral;  // no losses: the kernel tables alone
  for (const auto& r : runs) {
    const planner::Prediction p0 = predict_run(r, neutral);
    RowFit f = row_fit(r, p0);
    f.neutral_s = p0.iteration_s;
    f.fitted_s = predict_run_s(r, out.losses);
    if (r.fit) {
      out.neutral.add(f.neutral_s / f.measured_s - 1);
      out.fitted.add(f.fitted_s / f.measured_s - 1);
    }
    out.rows.push_back(f);
  }
  std::vector<double> fitted_pred;
  for (const auto& f : out.rows) fitted_pred.push_back(f.fitted_s);
  out.sweeps = check_sweeps(out.rows, fitted_pred);

  if (o.cross_validate) {
    std::vector<std::string> sources;
    for (const auto& r : runs)
      if (std::find(sources.begin(), sources.end(), r.source) == sources.end()) sources.push_back(r.source);
    for (const auto& s : sources) {
      SourceCheck c;
      c.source = s;
      std::vector<const MeasuredRun*> train;
      for (const MeasuredRun* r : fit_rows_all)
        if (r->source != s) train.push_back(r);
      if (train.size() < 3) {
        c.note = fmt::format("not held out: the other sources leave {} rows to fit", train.size());
        c.kendall_tau = std::numeric_limits<double>::quiet_NaN();
        out.held_out.push_back(c);
        continue;
      }
      say(fmt::format("cross-validation: fitting without '{}' ({} rows)", s, train.size()));
      FitOptions inner = o;
      inner.cross_validate = false;
      const FitCore f = fit_rows(train, inner, gemm_measured);
      for (int j = 0; j < kLossParameters; ++j) {
        const auto ju = static_cast<std::size_t>(j);
        if (f.losses.status[ju] != "fitted" && f.losses.status[ju] != "at_bound") continue;
        c.parameters += fmt::format("{}{} {:.4g}{}", c.parameters.empty() ? "" : ", ", spec(j).name,
                                    f.losses.value[ju], f.losses.status[ju] == "at_bound" ? " (at bound)" : "");
      }
      std::vector<double> pred(runs.size(), 0.0);
      for (std::size_t i = 0; i < runs.size(); ++i) {
        if (runs[i].source != s) continue;
        pred[i] = out.rows[i].held_out_s = predict_run_s(runs[i], f.losses);
        c.error.add(pred[i] / runs[i].measured_s - 1);
      }
      const auto sw = check_sweeps(out.rows, pred, s);
      double tau = 0;
      int taus = 0;
      for (const auto& x : sw)
        if (!std::isnan(x.kendall_tau)) tau += x.kendall_tau, ++taus;  // a sweep of tied points says nothing
      c.kendall_tau = taus == 0 ? std::numeric_limits<double>::quiet_NaN() : tau / taus;
      out.held_out.push_back(c);
    }
  }

  // The record kept in the profile: what the fit saw and how it did.
  std::string rec;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  rec += fmt::format("source: {{kind: estimate, tool: \"strata calibrate --from-runs\", method: \"MAP, bounded "
                     "Levenberg-Marquardt on log(predicted/measured), row_sigma {}, priors as penalties\", "
                     "date: \"{}\", rows: {}, iterations: {}}}\n",
                     o.row_sigma, date, fit_rows_all.size(), out.iterations);
  rec += fmt::format("in_sample: {{rows: {}, mape_pct: {:.2f}, bias_pct: {:+.2f}, worst_pct: {:+.2f}, "
                     "neutral_mape_pct: {:.2f}}}\n",
                     out.fitted.rows, 100 * out.fitted.mape, 100 * out.fitted.bias, 100 * out.fitted.worst,
                     100 * out.neutral.mape);
  rec += "rows:\n";
  for (const auto& f : out.rows)
    rec += fmt::format("  - {{id: {}, source: {}, use: {}, measured_s: {:.6g}, neutral_s: {:.6g}, fitted_s: {:.6g}, "
                       "residual_pct: {:+.2f}{}}}\n",
                       quoted(f.id), quoted(f.source),
                       f.fit ? "fit" : "check", f.measured_s, f.neutral_s, f.fitted_s,
                       100 * (f.fitted_s / f.measured_s - 1),
                       f.held_out_s > 0 ? fmt::format(", held_out_s: {:.6g}", f.held_out_s) : "");
  if (!out.held_out.empty()) {
    rec += "cross_validation:  # leave-one-source-out\n";
    for (const auto& c : out.held_out)
      rec += fmt::format("  - {{held_out: {}, rows: {}, mape_pct: {:.2f}, bias_pct: {:+.2f}, worst_pct: {:+.2f}{}}}\n",
                         quoted(c.source), c.error.rows, 100 * c.error.mape,
                         100 * c.error.bias, 100 * c.error.worst,
                         c.note.empty() ? "" : ", note: " + quoted(c.note));
  }
  if (!out.notes.empty()) {
    rec += "notes:\n";
    for (const auto& n : out.notes) rec += "  - " + quoted(n) + "\n";
  }
  out.losses.record_yaml = rec;
  return out;
}

std::string fit_report(const FitResult& r) {
  std::string o;
  o += fmt::format("# training-loss fit on {}: {} rows ({} fitted), {} iterations\n", r.device, r.rows.size(),
                   r.fitted.rows, r.iterations);
  o += fmt::format("# {:<20} {:>10} {:>10} {:>8} {:>9} {:>15}  {}\n", "parameter", "value", "std_err", "prior",
                   "unit", "range", "status");
  for (int j = 0; j < kLossParameters; ++j) {
    const auto ju = static_cast<std::size_t>(j);
    const auto& p = spec(j);
    o += fmt::format("  {:<20} {:>10.4g} {:>10.3g} {:>8.4g} {:>9} {:>15}  {}\n", p.name, r.losses.value[ju],
                     r.losses.std_error[ju], p.prior, p.unit, fmt::format("[{:g}, {:g}]", p.lo, p.hi),
                     r.losses.status[ju]);
  }
  for (const auto& n : r.notes) o += "# note: " + n + "\n";
  o += fmt::format("#\n# {:<32} {:<40} {:>10} {:>10} {:>8} {:>10} {:>8} {:>9}\n", "row", "source", "measured",
                   "neutral", "err(%)", "fitted", "err(%)", "held(%)");
  for (const auto& f : r.rows)
    o += fmt::format("  {:<24} {:<28} {:>10.4g} {:>10.4g} {:>+8.1f} {:>10.4g} {:>+8.1f} {:>9}{}\n", f.id,
                     f.source.substr(0, 40), f.measured_s, f.neutral_s, 100 * (f.neutral_s / f.measured_s - 1),
                     f.fitted_s, 100 * (f.fitted_s / f.measured_s - 1),
                     f.held_out_s > 0 ? fmt::format("{:+.1f}", 100 * (f.held_out_s / f.measured_s - 1)) : "-",
                     f.fit ? "" : "  (check only)");
  o += fmt::format("# in-sample ({} rows): MAPE {:.1f} % (no losses: {:.1f} %), mean signed {:+.1f} %, worst {:+.1f} %\n",
                   r.fitted.rows, 100 * r.fitted.mape, 100 * r.neutral.mape, 100 * r.fitted.bias, 100 * r.fitted.worst);
  for (const auto& c : r.held_out) {
    if (!c.note.empty()) {
      o += fmt::format("# held out '{}': {}\n", c.source, c.note);
      continue;
    }
    o += fmt::format("# held out '{}' ({} rows): MAPE {:.1f} %, mean signed {:+.1f} %, worst {:+.1f} %{}\n", c.source,
                     c.error.rows, 100 * c.error.mape, 100 * c.error.bias, 100 * c.error.worst,
                     std::isnan(c.kendall_tau) ? "" : fmt::format(", Kendall tau {:.2f}", c.kendall_tau));
    if (!c.parameters.empty()) o += fmt::format("#   fitted without it: {}\n", c.parameters);
  }
  for (const auto& s : r.sweeps)
    o += fmt::format("# sweep '{}' ({} points): Kendall tau {:.2f}, measured best predicted {:+.1f} % off the "
                     "predicted best\n",
                     s.sweep, s.points, s.kendall_tau, 100 * s.best_gap);
  return o;
}

std::string residual_entries(const FitResult& r) {
  struct Acc {
    ErrorSummary e;
    double lo = 0, hi = 0, pmin = 0, pmax = 0, mfu_max = 0, mfu_max_fp8 = 0;
    long long gmin = 0, gmax = 0, smin = 0, smax = 0;
    std::string device;
  };
  std::map<std::tuple<std::string, std::string, bool>, Acc> by;
  for (const auto& f : r.rows) {
    // Out-of-sample predictions only: a fitted row as the fit without its source predicts it;
    // an MoE check row (never fitted) as the fit predicts it. Dense check rows stay out: the
    // dense bands come from the held-out dev sources.
    const double predicted = f.fit ? f.held_out_s : f.moe ? f.fitted_s : 0.0;
    if (!(predicted > 0)) continue;
    Acc& a = by[{f.stack, f.source, f.moe}];
    const double err = predicted / f.measured_s - 1;
    const bool first = a.e.rows == 0;
    a.e.add(err);
    a.device = f.device;
    double& top = f.fp8 ? a.mfu_max_fp8 : a.mfu_max;  // 16-bit and FP8 runs apart
    top = std::max(top, f.measured_mfu);
    a.lo = first ? err : std::min(a.lo, err), a.hi = first ? err : std::max(a.hi, err);
    a.pmin = first ? f.params_b : std::min(a.pmin, f.params_b), a.pmax = std::max(a.pmax, f.params_b);
    a.gmin = first ? f.gpus : std::min(a.gmin, f.gpus), a.gmax = std::max(a.gmax, f.gpus);
    a.smin = first ? f.seq : std::min(a.smin, f.seq), a.smax = std::max(a.smax, f.seq);
  }
  std::string o;
  for (const auto& [key, a] : by)
    o += fmt::format("  - {{stack: {}, device: {}, set: {}, rows: {}, mape: {:.3f}, max_abs: {:.3f}, bias: {:.3f}, "
                     "err: [{:.3f}, {:.3f}], params_b: [{:.6g}, {:.6g}], gpus: [{}, {}], seq: [{}, {}], mfu_max: {:.3f}, "
                     "mfu_max_fp8: {:.3f}, profile: fitted{}}}\n",
                     std::get<0>(key), a.device,
                     quoted(std::get<1>(key) + ", held out of the fitted profile"), a.e.rows,
                     a.e.mape, std::fabs(a.e.worst), a.e.bias, a.lo, a.hi, a.pmin, a.pmax, a.gmin, a.gmax, a.smin,
                     a.smax, a.mfu_max, a.mfu_max_fp8, std::get<2>(key) ? ", models: moe" : "");
  return o;
}

std::string fitted_profile_yaml(const FitResult& r, costmodel::DeviceProfile base, const std::string& runs_path) {
  base.training_losses = r.losses;
  base.training_losses.record_yaml =
      fmt::format("fitted_from: {}\n", quoted(runs_path)) + r.losses.record_yaml;
  std::string head = fmt::format(
      "# Written by `strata calibrate --from-runs {}`: device {} with its training-loss parameters fitted to\n"
      "# the measured runs listed under training_losses.rows (costmodel/training_losses.h). Use it with\n"
      "# --profile on plan, simulate, compare and validate.\n",
      runs_path, base.name);
  return head + costmodel::to_yaml(base);
}

RunsCheck check_runs(const std::vector<MeasuredRun>& runs, const costmodel::DeviceProfile* profile,
                     const std::string& profile_name) {
  RunsCheck c;
  std::map<std::string, ErrorSummary> by_source;
  std::string& o = c.text;
  o += fmt::format("# predicted vs measured seconds per iteration; profile: {}\n",
                   profile ? profile_name : "each cluster's own");
  o += fmt::format("# {:<32} {:<14} {:<16} {:>6} {:>10} {:>10} {:>8}  {:<7} {}\n", "row", "device", "stack", "gpus",
                   "measured", "predicted", "err(%)", "losses", "mem/GPU GiB");
  // A run that ran but is predicted not to fit is a memory-model miss, named after the table;
  // so is a reported peak far from the predicted one.
  std::vector<std::string> over_memory, over_as_reported;
  ErrorSummary memory;
  for (const auto& run : runs) {
    MeasuredRun r = run;
    if (profile) {
      costmodel::apply_profile(r.cluster, *profile, profile_name);
      r.graphs = planner::make_simulation_graphs();  // another device description: its own graphs
    }
    const TrainingLosses& l = r.cluster.device.training_losses;
    const planner::Prediction p = predict_run(r, l);
    RowFit f = row_fit(r, p);
    f.fitted_s = p.iteration_s;
    const double err = f.fitted_s / f.measured_s - 1;
    c.all.add(err);
    by_source[r.source].add(err);
    o += fmt::format("  {:<32} {:<14} {:<16} {:>6} {:>10.4g} {:>10.4g} {:>+8.1f}  {:<7} {:.1f}/{:.0f}{}\n", f.id,
                     r.cluster.device.name.substr(0, 14), r.stack.name.substr(0, 16), r.strategy.gpus(),
                     f.measured_s, f.fitted_s, 100 * err, l.present ? "fitted" : "none", p.peak_memory_gib,
                     r.cluster.device.memory_gib,
                     (p.fits_memory ? std::string() : std::string(" OVER")) +
                         (r.measured_memory_gib > 0
                              ? fmt::format(" (reported {:.1f}, {:+.0f} %)", r.measured_memory_gib,
                                            100 * (p.peak_memory_gib / r.measured_memory_gib - 1))
                              : std::string()));
    if (r.measured_memory_gib > 0) memory.add(p.peak_memory_gib / r.measured_memory_gib - 1);
    // A run whose own reported peak is above this cluster's memory ran on a larger part: its
    // prediction over that memory agrees with it, it is no miss.
    const bool reported_over = r.measured_memory_gib > r.cluster.device.memory_gib;
    if (!p.fits_memory) (reported_over ? over_as_reported : over_memory).push_back(f.id);
    c.rows.push_back(f);
  }
  for (const auto& [source, e] : by_source)
    o += fmt::format("# source '{}' ({} rows): MAPE {:.1f} %, mean signed {:+.1f} %, worst {:+.1f} %\n", source, e.rows,
                     100 * e.mape, 100 * e.bias, 100 * e.worst);
  std::vector<double> pred;
  for (const auto& f : c.rows) pred.push_back(f.fitted_s);
  for (const auto& s : check_sweeps(c.rows, pred))
    o += fmt::format("# sweep '{}' ({} points): Kendall tau {:.2f}, measured best predicted {:+.1f} % off the "
                     "predicted best\n",
                     s.sweep, s.points, s.kendall_tau, 100 * s.best_gap);
  o += fmt::format("# all {} rows: MAPE {:.1f} %, mean signed {:+.1f} %, worst {:+.1f} %\n", c.all.rows,
                   100 * c.all.mape, 100 * c.all.bias, 100 * c.all.worst);
  if (memory.rows > 0)
    o += fmt::format("# memory: {} rows report their peak; predicted vs reported MAPE {:.1f} %, mean signed {:+.1f} %, "
                     "worst {:+.1f} % (a reported peak may be the allocator's reserved memory, above what tensors "
                     "hold)\n",
                     memory.rows, 100 * memory.mape, 100 * memory.bias, 100 * memory.worst);
  if (!over_as_reported.empty())
    o += fmt::format("# predicted over this cluster's memory as their reported peak is too ({} of {} rows: they ran "
                     "on a larger part): {}\n",
                     over_as_reported.size(), c.all.rows, fmt::join(over_as_reported, ", "));
  if (!over_memory.empty())
    o += fmt::format("# predicted over memory though they ran ({} of {} rows): {}\n", over_memory.size(), c.all.rows,
                     fmt::join(over_memory, ", "));
  return c;
}

}  // namespace strata::calibration
