// Typed errors for expected failures (bad file, unsupported op, malformed argument).
//
// Contract: every hap::Error message is complete and user-facing: it names the file, field or
// node concerned and says what to do. Bugs are assertions, never hap::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace hap {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A model file that cannot be imported (missing, not TorchScript, unsupported construct).
class ImportError : public Error {
 public:
  using Error::Error;
};

// An input specification (hap/inputs.json or --input) that is malformed or incomplete.
class InputSpecError : public Error {
 public:
  using Error::Error;
};

// A forward argument no specification names: the shapes must come from the user (--input, or
// the app's inputs dialog).
class MissingInputSpecError : public InputSpecError {
 public:
  using InputSpecError::InputSpecError;
};

}  // namespace hap
