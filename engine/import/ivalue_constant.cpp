#include "engine/import/ivalue_constant.h"

#include <sstream>

namespace hap::import {

ir::Constant toConstant(const c10::IValue& v) {
  if (v.isNone()) return std::monostate{};
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isIntList()) return v.toIntVector();
  if (v.isDoubleList()) return v.toDoubleVector();
  if (v.isBoolList()) {
    std::vector<bool> out;
    for (bool b : v.toBoolList()) out.push_back(b);
    return out;
  }
  if (v.isDevice()) return v.toDevice().str();
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace hap::import
