//===- Options.cpp - command-line options of pa-gpu-runner ----------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

using namespace pa::runner;

bool pa::runner::parseInt64(const std::string &s, int64_t &out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || !end || *end || end == s.c_str())
    return false;
  out = v;
  return true;
}

bool pa::runner::parsePositiveList(const std::string &s,
                                   std::vector<int64_t> &out) {
  std::vector<int64_t> values;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t v;
    if (!parseInt64(item, v) || v < 1)
      return false;
    values.push_back(v);
  }
  // getline drops a trailing empty item: "1,2," is malformed too.
  if (values.empty() || s.back() == ',')
    return false;
  out = std::move(values);
  return true;
}

bool pa::runner::parseCount(const std::string &s, int64_t &out) {
  std::string digits = s;
  int shift = 0;
  if (!digits.empty() && (digits.back() == 'i' || digits.back() == 'I')) {
    digits.pop_back();
    // "5i" is not a count: 'i' only after a suffix.
    if (digits.empty() || std::isdigit(static_cast<unsigned char>(digits.back())))
      return false;
  }
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    case 'T':
      shift = 40;
      break;
    default:
      break;
    }
    if (shift)
      digits.pop_back();
  }
  int64_t v;
  // Digits only: no sign, no spaces.
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return false;
  if (!parseInt64(digits, v) || v > (std::numeric_limits<int64_t>::max() >> shift))
    return false;
  out = v << shift;
  return true;
}

OptionParser::OptionParser(std::string command) : command(std::move(command)) {}

void OptionParser::add(
    const std::string &name, const std::string &metavar,
    const std::string &help,
    std::function<bool(const std::string &, std::string &)> set) {
  Option o;
  o.name = name;
  o.metavar = metavar;
  o.help = help;
  o.set = std::move(set);
  options.push_back(std::move(o));
}

void OptionParser::flag(const std::string &name, bool &out,
                        const std::string &help) {
  add(name, "", help, [&out](const std::string &, std::string &) {
    out = true;
    return true;
  });
}

void OptionParser::addInteger(const std::string &name, int64_t min, int64_t max,
                              const std::string &help,
                              std::function<void(int64_t)> store) {
  add(name, "N", help,
      [min, max, store](const std::string &value, std::string &error) {
        int64_t v;
        if (parseInt64(value, v) && v >= min && v <= max) {
          store(v);
          return true;
        }
        std::ostringstream os;
        os << "an integer ";
        if (max == std::numeric_limits<int64_t>::max())
          os << ">= " << min;
        else
          os << "in [" << min << ", " << max << "]";
        error = os.str();
        return false;
      });
}

void OptionParser::count(const std::string &name, int64_t &out, int64_t min,
                         int64_t max, const std::string &help) {
  add(name, "N", help,
      [&out, min, max](const std::string &value, std::string &error) {
        int64_t v;
        if (parseCount(value, v) && v >= min && v <= max) {
          out = v;
          return true;
        }
        std::ostringstream os;
        os << "a count in [" << min << ", " << max
           << "] (digits, optionally with a suffix K, M, G or T: powers of "
              "1024, e.g. 5G)";
        error = os.str();
        return false;
      });
}

void OptionParser::positiveReal(const std::string &name, double &out,
                                const std::string &help) {
  add(name, "X", help, [&out](const std::string &value, std::string &error) {
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(value.c_str(), &end);
    if (errno || value.empty() || !end || *end || !std::isfinite(v) || v <= 0) {
      error = "a number > 0";
      return false;
    }
    out = v;
    return true;
  });
}

void OptionParser::text(const std::string &name, const std::string &metavar,
                        std::string &out, const std::string &help) {
  add(name, metavar, help,
      [&out](const std::string &value, std::string &error) {
        if (value.empty()) {
          error = "a non-empty value";
          return false;
        }
        out = value;
        return true;
      });
}

void OptionParser::choice(const std::string &name, std::string &out,
                          const std::vector<std::string> &values,
                          const std::string &help) {
  std::string metavar;
  for (const std::string &v : values)
    metavar += (metavar.empty() ? "" : "|") + v;
  add(name, metavar, help,
      [&out, values, metavar](const std::string &value, std::string &error) {
        if (std::find(values.begin(), values.end(), value) == values.end()) {
          error = "one of " + metavar;
          return false;
        }
        out = value;
        return true;
      });
}

void OptionParser::positiveList(const std::string &name,
                                std::vector<int64_t> &out,
                                const std::string &help) {
  add(name, "a,b,..", help,
      [&out](const std::string &value, std::string &error) {
        if (parsePositiveList(value, out))
          return true;
        error = "a comma-separated list of integers >= 1";
        return false;
      });
}

void OptionParser::operands(const std::string &metavar,
                            std::vector<std::string> &out, size_t min,
                            size_t max) {
  operandName = metavar;
  operandsOut = &out;
  minOperands = min;
  maxOperands = max;
}

OptionParser::Option *OptionParser::find(const std::string &name) {
  for (Option &o : options)
    if (o.name == name)
      return &o;
  return nullptr;
}

bool OptionParser::seen(const std::string &name) const {
  for (const Option &o : options)
    if (o.name == name)
      return o.seen;
  return false;
}

bool OptionParser::parse(int argc, const char *const *argv, int first,
                         std::string &error) {
  std::string prefix = "pa-gpu-runner " + command + ": ";
  std::vector<std::string> operandValues;
  bool onlyOperands = false;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (onlyOperands || a.empty() || a[0] != '-' || a == "-") {
      operandValues.push_back(a);
      continue;
    }
    if (a == "--") {
      onlyOperands = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      help = true;
      return true;
    }
    Option *o = find(a);
    if (!o) {
      error = prefix + "unknown option '" + a + "'";
      return false;
    }
    std::string value;
    if (!o->metavar.empty()) {
      // A following flag is not a value: "--out --reps 3" lacks the file.
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0) {
        error = prefix + a + " needs a value (" + a + " " + o->metavar + ")";
        return false;
      }
      value = argv[++i];
    }
    std::string what;
    if (!o->set(value, what)) {
      error = prefix + a + " '" + value + "': expected " + what;
      return false;
    }
    o->seen = true;
  }
  if (operandValues.size() < minOperands ||
      operandValues.size() > maxOperands) {
    std::ostringstream os;
    os << prefix << "expected ";
    if (minOperands == maxOperands)
      os << minOperands;
    else if (maxOperands == SIZE_MAX)
      os << "at least " << minOperands;
    else
      os << minOperands << " to " << maxOperands;
    os << " " << (operandName.empty() ? "operand" : operandName)
       << (minOperands == 1 && maxOperands == 1 ? "" : "s") << ", got "
       << operandValues.size();
    if (!operandValues.empty()) {
      os << " (";
      for (size_t i = 0; i < operandValues.size(); ++i)
        os << (i ? " " : "") << "'" << operandValues[i] << "'";
      os << ")";
    }
    error = os.str();
    return false;
  }
  if (operandsOut)
    *operandsOut = std::move(operandValues);
  return true;
}

std::string OptionParser::usage() const {
  std::ostringstream os;
  os << "  pa-gpu-runner " << command << " [options] " << operandName
     << (maxOperands > 1 ? "..." : "") << "\n";
  for (const Option &o : options) {
    std::string head = "    " + o.name;
    if (!o.metavar.empty())
      head += " " + o.metavar;
    os << head;
    if (head.size() < 26)
      os << std::string(26 - head.size(), ' ');
    else
      os << "\n" << std::string(26, ' ');
    os << o.help << "\n";
  }
  return os.str();
}
