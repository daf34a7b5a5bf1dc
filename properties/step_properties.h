// File: step_properties.h
// The law of an external engine's steppers (the fused append-then-attend of model code,
// src/engine/kvcheck_engine.h): step/<stepper>/<dtype>.
//
// A case is a sequence of steps, S tokens each (decode-size S = 1 mostly, chunks at and
// around the window W and longer than it), and resets (when declared) that may change B, H,
// KH and D, as a new generation with another batch does. kvcheck keeps the history since the
// last reset; every step's output must be, element by element within the reference's derived
// bound, the causal attention of its queries (positions P .. P + S - 1) over that history
// (windowed: the keys within each query's last W positions). Inputs arrive contiguous or as
// transposed (B, S, H, D) buffers, as model code produces them. A failure prints the shrunk
// sequence and the first diverging element with its row's inputs.
#ifndef KVCHECK_PROPERTIES_STEP_PROPERTIES_H_
#define KVCHECK_PROPERTIES_STEP_PROPERTIES_H_

#include <vector>

#include "properties/property_runner.h"
#include "properties/subject.h"

namespace kvcheck::properties {

// One property per stepper and declared dtype of subject.engine (none for the built-in
// engine). REQUIRES: `subject` outlives the properties.
std::vector<PropertySpec> StepProperties(const Subject& subject);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_STEP_PROPERTIES_H_
