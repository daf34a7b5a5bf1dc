// msl_translate: turns a .metal source into C++ that compiles against the emulator's shim
// (metal_stdlib.h), at build time (the msl_kernel_library rule, msl_kernel.bzl). The .metal
// file itself stays as it is written for Apple's compiler; only what C++ cannot express with
// declarations and macros alone is rewritten, each on the line where it stands (so compiler
// errors and the executor's call sites keep the .metal line numbers):
//   - `#include <metal_stdlib>` -> the shim;
//   - parameter attributes: `[[buffer(n)]]` -> `= ::kvcheck::msl::Buffer(n)` and
//     `[[threadgroup(n)]]`, `[[thread_position_in_grid]]`, ... -> a default argument that
//     reads the current thread's value, so the emulator calls every kernel with no arguments;
//   - `constant T name [[function_constant(n)]];` -> a macro that reads the dispatch's value;
//   - `threadgroup T name[N]...;` declared in a function -> a reference to the threadgroup's
//     shared block for that declaration (ThreadgroupMemory);
//   - `device T*` and `const device T*` (also `device const T*`) -> DevicePtr<T> and
//     DevicePtr<const T> (device_pointer.h): every access checked against the buffer; the
//     same for a `threadgroup T*` parameter bound with [[threadgroup(n)]], checked against
//     the length the dispatch sets;
//   - `[[kernel]] void name(` / `kernel void name(` -> registered under `name`, and
//     `template [[host_name("x")]] [[kernel]] decltype(f<...>) f<...>;` -> registered as "x".
//
//   - `#include "header"` found next to the .metal file is inlined (with #line markers) and
//     translated with it, so the kernels' own headers get the same rewriting;
// The whole translation sits in an anonymous namespace (after the shim, included first), so
// that two libraries built from one source with different macros (the defect variants) link
// into one binary; `--prefix=P` registers every kernel as P + its name.
//
//   msl_translate input.metal output.cc [--prefix=P]
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// `text` (from `path`) with every `#include "name"` that names a file in path's directory
// replaced by that file's text, recursively, between #line markers that keep compiler errors
// and the executor's call sites pointing at the right file and line.
std::string InlineIncludes(const std::string& path, const std::string& text, int depth) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::regex include_line(R"(^\s*#\s*include\s*\"([^\"]+)\"\s*$)");
  std::istringstream lines(text);
  std::string line, result;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::smatch m;
    bool found = false;
    if (depth < 16 && std::regex_match(line, m, include_line)) {
      const std::string header = dir + std::string(m[1]);
      const std::string content = ReadFile(header, &found);
      if (found) {
        result += "#line 1 \"" + header + "\"\n" + InlineIncludes(header, content, depth + 1) +
                  "\n#line " + std::to_string(number + 1) + " \"" + path + "\"\n";
      }
    }
    if (!found) result += line + "\n";
  }
  return result;
}

const char* const kBuiltins[] = {
    "thread_position_in_grid",         "threadgroup_position_in_grid",
    "thread_position_in_threadgroup",  "threads_per_threadgroup",
    "threadgroups_per_grid",           "threads_per_grid",
    "thread_index_in_threadgroup",     "simdgroup_index_in_threadgroup",
    "thread_index_in_simdgroup",       "threads_per_simdgroup",
    "simdgroups_per_threadgroup",      "thread_execution_width",
};

std::string Translate(const std::string& source, std::vector<std::string>* kernels,
                      std::vector<std::pair<std::string, std::string>>* instances) {
  std::string text = std::regex_replace(
      source, std::regex(R"(#\s*include\s*<metal_stdlib>)"),
      "#include \"src/metal/msl_cpu/metal_stdlib.h\"");
  text = std::regex_replace(text, std::regex(R"(\[\[\s*buffer\s*\(\s*(\d+)\s*\)\s*\]\])"),
                            "= ::kvcheck::msl::Buffer($1)");
  // A threadgroup pointer parameter whose length the host sets: a checked pointer (a
  // qualified or template type as for device pointers below), const where either side says.
  text = std::regex_replace(
      text,
      std::regex(
          R"re(\bconst\s+threadgroup\s+([A-Za-z_][\w:]*(?:<[^<>;()*&]*>)?)\s*\*(\s*\w+\s*\[\[\s*threadgroup\s*\())re"),
      "::kvcheck::msl::DevicePtr<const $1>$2");
  text = std::regex_replace(
      text,
      std::regex(
          R"re(\bthreadgroup\s+const\s+([A-Za-z_][\w:]*(?:<[^<>;()*&]*>)?)\s*\*(\s*\w+\s*\[\[\s*threadgroup\s*\())re"),
      "::kvcheck::msl::DevicePtr<const $1>$2");
  text = std::regex_replace(
      text,
      std::regex(
          R"re(\bthreadgroup\s+([A-Za-z_][\w:]*(?:<[^<>;()*&]*>)?)\s*\*(\s*\w+\s*\[\[\s*threadgroup\s*\())re"),
      "::kvcheck::msl::DevicePtr<$1>$2");
  text = std::regex_replace(text, std::regex(R"(\[\[\s*threadgroup\s*\(\s*(\d+)\s*\)\s*\]\])"),
                            "= ::kvcheck::msl::ThreadgroupArgument($1)");
  for (const char* builtin : kBuiltins) {
    text = std::regex_replace(
        text, std::regex(std::string(R"(\[\[\s*)") + builtin + R"(\s*\]\])"),
        std::string("= ::kvcheck::msl::builtin::") + builtin + "()");
  }
  // Function constants: a declaration on its own line becomes a macro that reads the current
  // dispatch's value (the line count stays the same), and is_function_constant_defined(name)
  // asks the dispatch about that index.
  const std::regex constant_line(
      R"(^\s*constant\s+([\w:]+)\s+(\w+)\s*\[\[\s*function_constant\s*\(\s*(\d+)\s*\)\s*\]\]\s*;\s*$)");
  std::istringstream lines(text);
  std::string line, rebuilt;
  std::vector<std::pair<std::string, std::string>> constants;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, constant_line)) {
      constants.emplace_back(m[2], m[3]);
      line = "#define " + std::string(m[2]) + " (::kvcheck::msl::FunctionConstant<" +
             std::string(m[1]) + ">(" + std::string(m[3]) + ", \"" + std::string(m[2]) + "\"))";
    }
    rebuilt += line + "\n";
  }
  text = rebuilt;
  for (const auto& [name, index] : constants) {
    text = std::regex_replace(
        text, std::regex(R"(is_function_constant_defined\s*\(\s*)" + name + R"(\s*\))"),
        "::kvcheck::msl::FunctionConstantDefined(" + index + ")");
  }
  // Device pointers (a type name, maybe qualified or a template-id, then `*`).
  text = std::regex_replace(
      text,
      std::regex(R"(\bconst\s+device\s+([A-Za-z_][\w:]*(?:<[^<>;()*&]*>)?)\s*\*)"),
      "::kvcheck::msl::DevicePtr<const $1>");
  text = std::regex_replace(
      text, std::regex(R"(\bdevice\s+const\s+([A-Za-z_][\w:]*(?:<[^<>;()*&]*>)?)\s*\*)"),
      "::kvcheck::msl::DevicePtr<const $1>");
  text = std::regex_replace(
      text, std::regex(R"(\bdevice\s+([A-Za-z_][\w:]*(?:<[^<>;()*&]*>)?)\s*\*)"),
      "::kvcheck::msl::DevicePtr<$1>");
  // Threadgroup arrays and scalars declared in a function body.
  text = std::regex_replace(
      text,
      std::regex(R"(threadgroup\s+([\w:<>, ]+?)\s+(\w+)\s*((?:\[[^\]\n]+\])*)\s*;)"),
      "auto& $2 = ::kvcheck::msl::Shared<$1$3>([] { static const char site = 0; return &site; }());");
  // Explicit instantiations with a host name.
  const std::regex instance(
      R"(template\s*\[\[\s*host_name\s*\(\s*\"([^\"]+)\"\s*\)\s*\]\]\s*\[\[\s*kernel\s*\]\]\s*decltype\s*\(\s*([^;]+?)\s*\)\s*[^;]+;)");
  for (std::sregex_iterator it(text.begin(), text.end(), instance), end; it != end; ++it) {
    instances->emplace_back((*it)[1], (*it)[2]);
  }
  text = std::regex_replace(text, instance, "/* instantiated: $1 */");
  // Plain kernels: `[[kernel]] void name(` or `kernel void name(` at the start of a line.
  const std::regex plain(R"((^|\n)\s*(?:\[\[\s*kernel\s*\]\]|kernel)\s+void\s+(\w+)\s*\()");
  for (std::sregex_iterator it(text.begin(), text.end(), plain), end; it != end; ++it) {
    // A template kernel (`template <...>` before it) is registered by its instantiations.
    size_t before = static_cast<size_t>(it->position(0));
    while (before > 0 && std::isspace(static_cast<unsigned char>(text[before - 1]))) --before;
    if (before > 0 && text[before - 1] == '>') continue;
    kernels->push_back((*it)[2]);
  }
  text = std::regex_replace(text, std::regex(R"(\[\[\s*kernel\s*\]\])"), "");
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string prefix;
  if (argc == 4 && std::string(argv[3]).rfind("--prefix=", 0) == 0) {
    prefix = std::string(argv[3]).substr(9);
  } else if (argc != 3) {
    std::fprintf(stderr, "usage: msl_translate input.metal output.cc [--prefix=P]\n");
    return 2;
  }
  bool ok = false;
  const std::string source = ReadFile(argv[1], &ok);
  if (!ok) {
    std::fprintf(stderr, "msl_translate: cannot read %s\n", argv[1]);
    return 1;
  }
  std::vector<std::string> kernels;
  std::vector<std::pair<std::string, std::string>> instances;
  const std::string body = Translate(InlineIncludes(argv[1], source, 0), &kernels, &instances);
  std::ofstream out(argv[2]);
  out << "// Generated by msl_translate from " << argv[1] << "; do not edit.\n"
      << "#include \"src/metal/msl_cpu/metal_stdlib.h\"\n"
      << "namespace {\n"
      << "#line 1 \"" << argv[1] << "\"\n"
      << body << "\n}  // namespace\n\n// Registration of the kernels for the emulator.\n"
      << "namespace {\n";
  int n = 0;
  for (const std::string& k : kernels) {
    out << "const ::kvcheck::msl::KernelRegistration kvcheck_msl_kernel_" << n++ << "(\""
        << prefix << k << "\", [] { " << k << "(); });\n";
  }
  for (const auto& [name, function] : instances) {
    out << "const ::kvcheck::msl::KernelRegistration kvcheck_msl_kernel_" << n++ << "(\""
        << prefix << name
        << "\", [] { " << function << "(); });\n";
  }
  out << "}  // namespace\n";
  if (!out) {
    std::fprintf(stderr, "msl_translate: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
