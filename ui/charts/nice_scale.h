#pragma once
// Internal to the inspector charts: axis ranges that change only when the data crosses a round
// step. A chart whose range follows the data exactly relayouts its axis every frame (QtCharts:
// ~2 ms per frame at 30 Hz) and its tick labels flicker.
#include <cmath>

namespace cflow::ui::detail {

// Smallest of 1, 2, 2.5, 5 x 10^k at or above value; 1 for a value that is not positive.
inline double nice_ceiling(double value) {
    if (!(value > 0) || !std::isfinite(value)) return 1.0;
    const double decade = std::pow(10.0, std::floor(std::log10(value)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * decade >= value * (1 - 1e-12)) return m * decade;
    return 10.0 * decade;
}

// The axis maximum to show for data whose largest value (with headroom) is `needed`, given the
// one shown now: grows at once, shrinks only when the data fell well below (under 40% of the
// current maximum), so data hovering around a step does not flip the axis back and forth
// (each change relayouts the axis: several ms in QtCharts).
inline double sticky_axis_max(double current, double needed) {
    if (current > 0 && needed <= current && needed >= 0.4 * current) return current;
    return nice_ceiling(needed);
}

// A round tick step giving 4-5 intervals on [0, axisMax] for an axisMax from nice_ceiling.
inline double nice_tick_step(double axisMax) {
    const double decade = std::pow(10.0, std::floor(std::log10(axisMax) + 1e-9));
    const double mantissa = axisMax / decade;
    if (mantissa < 1.5) return 0.2 * decade;
    if (mantissa < 4.0) return 0.5 * decade;
    return decade;
}

} // namespace cflow::ui::detail
