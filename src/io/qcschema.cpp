#include "src/io/qcschema.hpp"

#include <array>
#include <cmath>
#include <functional>
#include <map>

#include "src/common/errors.hpp"
#include "src/common/memory.hpp"
#include "src/common/text.hpp"

#ifndef DFMP2_VERSION
#error "DFMP2_VERSION must give dfmp2's version"
#endif

namespace dfmp2 {
namespace {

using nlohmann::json;

// object[key], which must be there; `parent` names the object ("" for the input itself).
const json& field(const json& object, const std::string& parent, const char* key) {
  if (!object.is_object()) throw InputError((parent.empty() ? "the input" : parent) + " must be a JSON object");
  const auto found = object.find(key);
  if (found == object.end()) throw InputError((parent.empty() ? "" : parent + ".") + key + " is missing");
  return *found;
}

// object[key] when there (an object of the input, checked), else an empty object.
json optional_object(const json& object, const char* key) {
  if (!object.contains(key)) return json::object();
  if (!object[key].is_object()) throw InputError(std::string(key) + " must be a JSON object");
  return object[key];
}

std::string text(const json& value, const std::string& name) {
  if (!value.is_string()) throw InputError(name + " must be a string, not " + value.dump());
  return value.get<std::string>();
}

// A number with an integer value that fits an int (QCSchema writes charges as floats: 0.0).
int integer(const json& value, const std::string& name) {
  const double number = value.is_number() ? value.get<double>() : NAN;
  if (!std::isfinite(number) || number != std::round(number) || std::abs(number) > 1e9)
    throw InputError(name + " must be an integer, not " + value.dump());
  return static_cast<int>(number);
}

double positive(const json& value, const std::string& name) {
  const double number = value.is_number() ? value.get<double>() : NAN;
  if (!std::isfinite(number) || !(number > 0.0))
    throw InputError(name + " must be a finite number above 0, not " + value.dump());
  return number;
}

// Psi4 takes true/false and the strings "true"/"false".
bool flag(const json& value, const std::string& name) {
  if (value.is_boolean()) return value.get<bool>();
  const std::string word = value.is_string() ? lowercase(value.get<std::string>()) : "";
  if (word != "true" && word != "false") throw InputError(name + " must be true or false, not " + value.dump());
  return word == "true";
}

template <typename Enum>
Enum choice(const json& value, const std::string& name, NamedChoices<Enum> choices) {
  try {
    return kernels::parse_in(choices, lowercase(text(value, name)), name);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

// Psi4's SCF types: the density-fitted ones and those with exact four-index integrals.
constexpr std::array<std::pair<ScfType, const char*>, 7> kPsi4ScfTypes{{{ScfType::df, "df"},
                                                                       {ScfType::df, "mem_df"},
                                                                       {ScfType::df, "disk_df"},
                                                                       {ScfType::exact, "pk"},
                                                                       {ScfType::exact, "direct"},
                                                                       {ScfType::exact, "out_of_core"},
                                                                       {ScfType::exact, "exact"}}};
constexpr std::array<std::pair<QcMethod, const char*>, 4> kMethods{
    {{QcMethod::hf, "hf"}, {QcMethod::hf, "scf"}, {QcMethod::mp2, "mp2"}, {QcMethod::scs_mp2, "scs-mp2"}}};

using KeywordSetter = std::function<void(const json& value, const std::string& name, RunOptions& options)>;

// keywords: each name (lowercase) and what it sets.
const std::map<std::string, KeywordSetter>& keyword_setters() {
  static const std::map<std::string, KeywordSetter> setters = {
      {"freeze_core", [](const json& v, const std::string& n, RunOptions& o) { o.frozen_core = flag(v, n); }},
      {"scf_type", [](const json& v, const std::string& n, RunOptions& o) {
         o.scf_type = choice<ScfType>(v, n, kPsi4ScfTypes);
       }},
      {"mp2_type", [](const json& v, const std::string& n, RunOptions&) {
         if (lowercase(text(v, n)) != "df")
           throw InputError(n + " is " + v.dump() + ": dfmp2 computes DF-MP2 only (df)");
       }},
      {"df_basis_mp2", [](const json& v, const std::string& n, RunOptions& o) { o.df_basis = text(v, n); }},
      {"df_basis_scf", [](const json& v, const std::string& n, RunOptions& o) { o.jk_basis = text(v, n); }},
      {"reference", [](const json& v, const std::string& n, RunOptions& o) {
         o.reference = choice(v, n, reference_names());
       }},
      {"guess", [](const json& v, const std::string& n, RunOptions& o) { o.guess = choice(v, n, scf_guess_names()); }},
      {"backend", [](const json& v, const std::string& n, RunOptions& o) {
         o.backend = choice(v, n, backend_names());
       }},
      {"precision", [](const json& v, const std::string& n, RunOptions& o) {
         o.precision = choice(v, n, precision_names());
       }},
      {"memory", [](const json& v, const std::string& n, RunOptions& o) {
         // A size with its unit ("8GB"), or a number of bytes: read as the command line's --memory.
         if (!v.is_string() && !v.is_number()) throw InputError(n + " must be a size such as \"8GB\", not " + v.dump());
         o.memory_bytes = parse_memory(v.is_string() ? v.get<std::string>() : v.dump());
       }},
      {"e_convergence", [](const json& v, const std::string& n, RunOptions& o) {
         o.scf.e_convergence = positive(v, n);
       }},
      {"d_convergence", [](const json& v, const std::string& n, RunOptions& o) {
         o.scf.d_convergence = positive(v, n);
       }},
      {"maxiter", [](const json& v, const std::string& n, RunOptions& o) {
         o.scf.max_iterations = integer(v, n);
         if (o.scf.max_iterations < 1) throw InputError(n + " must be at least 1");
       }},
  };
  return setters;
}

RunOptions read_keywords(const json& keywords) {
  RunOptions options;
  const auto& setters = keyword_setters();
  for (const auto& [key, value] : keywords.items()) {
    const auto setter = setters.find(lowercase(key));
    if (setter == setters.end()) {
      std::string names;
      for (const auto& [name, set] : setters) names += (names.empty() ? "" : ", ") + name;
      throw InputError("unknown keyword '" + key + "' (dfmp2 takes: " + names + ")");
    }
    setter->second(value, "keywords." + key, options);
  }
  return options;
}

// molecule: symbols, geometry (bohr, flat), molecular_charge, molecular_multiplicity, real, name.
Molecule read_molecule(const json& molecule) {
  const json& symbols = field(molecule, "molecule", "symbols");
  const json& geometry = field(molecule, "molecule", "geometry");
  if (!symbols.is_array() || symbols.empty()) throw InputError("molecule.symbols must be a list of element symbols");
  const std::size_t natom = symbols.size();
  if (!geometry.is_array() || geometry.size() != 3 * natom)
    throw InputError("molecule.geometry must be a flat list of 3 x " + std::to_string(natom) + " coordinates (bohr)");
  const json real = molecule.value("real", json::array());
  if (!real.is_array() || (!real.empty() && real.size() != natom))
    throw InputError("molecule.real must list true or false for each of the " + std::to_string(natom) + " atoms");
  Molecule mol;
  for (std::size_t a = 0; a < natom; ++a) {
    const std::string where = "molecule atom " + std::to_string(a + 1);
    Atom atom;
    atom.Z = atomic_number(text(symbols[a], "molecule.symbols[" + std::to_string(a) + "]"));
    for (std::size_t c = 0; c < 3; ++c) {
      const json& coordinate = geometry[3 * a + c];
      if (!coordinate.is_number()) throw InputError(where + ": coordinate " + coordinate.dump() + " is not a number");
      atom.r[c] = coordinate.get<double>();
    }
    if (!real.empty()) {
      if (!real[a].is_boolean()) throw InputError("molecule.real[" + std::to_string(a) + "] must be true or false");
      atom.ghost = !real[a].get<bool>();
    }
    mol.atoms.push_back(atom);
  }
  if (molecule.contains("molecular_charge"))
    mol.charge = integer(molecule["molecular_charge"], "molecule.molecular_charge");
  if (molecule.contains("molecular_multiplicity"))
    mol.multiplicity = integer(molecule["molecular_multiplicity"], "molecule.molecular_multiplicity");
  if (molecule.contains("name") && molecule["name"].is_string()) mol.name = molecule["name"].get<std::string>();
  validate(mol);
  return mol;
}

// Whether the driver asks for the gradient (else the energy).
bool read_gradient_driver(const json& input) {
  const std::string driver = lowercase(text(field(input, "", "driver"), "driver"));
  if (driver != "energy" && driver != "gradient")
    throw InputError("driver '" + driver + "' is not one dfmp2 computes: driver must be energy or gradient");
  return driver == "gradient";
}

}  // namespace

QcschemaJob read_atomic_input(const json& input) {
  if (!input.is_object()) throw InputError("the input must be a QCSchema AtomicInput, a JSON object");
  const std::string schema =
      input.contains("schema_name") ? text(input["schema_name"], "schema_name") : "qcschema_input";
  if (schema != "qcschema_input" && schema != "qc_schema_input")
    throw InputError("schema_name is '" + schema + "': dfmp2 reads a QCSchema AtomicInput (qcschema_input)");
  const bool gradient = read_gradient_driver(input);
  optional_object(input, "extras");
  if (const json protocols = optional_object(input, "protocols");
      protocols.contains("stdout") && !protocols["stdout"].is_boolean())
    throw InputError("protocols.stdout must be true or false");
  const json& model = field(input, "", "model");
  QcschemaJob job;
  job.method = choice<QcMethod>(field(model, "model", "method"), "model.method", kMethods);
  const json& basis = field(model, "model", "basis");
  if (!basis.is_string() || basis.get<std::string>().empty())
    throw InputError("model.basis must name an orbital basis set (dfmp2 takes basis set names, not QCSchema "
                     "basis objects)");
  if (gradient && job.method != QcMethod::mp2)
    throw InputError("driver gradient needs model.method mp2: dfmp2's gradient is the DF-MP2 energy's");
  job.options = read_keywords(optional_object(input, "keywords"));
  job.options.basis = basis.get<std::string>();
  job.options.gradient = gradient;
  job.input.path = "the QCSchema input";
  job.input.molecule = read_molecule(field(input, "", "molecule"));
  return job;
}

namespace {

json provenance() { return {{"creator", "dfmp2"}, {"version", DFMP2_VERSION}, {"routine", "dfmp2 qcschema"}}; }

// The input's fields, as QCSchema's outputs echo them, under the output's schema name.
json echo(const json& input) {
  json output = input.is_object() ? input : json::object();
  output["schema_name"] = "qcschema_output";
  output["schema_version"] = 1;
  output["provenance"] = provenance();
  return output;
}

double return_energy(QcMethod method, const RunResult& r) {
  switch (method) {
    case QcMethod::hf: return r.e_scf;
    case QcMethod::mp2: return r.e_total;
    case QcMethod::scs_mp2: return r.e_scf + r.e_scs_corr;
  }
  return r.e_total;
}

json properties(QcMethod method, const RunResult& r) {
  const bool uhf = r.unrestricted();
  json p = {{"calcinfo_nbasis", r.nbf}, {"calcinfo_nmo", r.nmo}, {"calcinfo_natom", r.natom},
            {"calcinfo_nalpha", r.nocc + r.nfrozen}, {"calcinfo_nbeta", (uhf ? r.nocc_beta : r.nocc) + r.nfrozen},
            {"nuclear_repulsion_energy", r.e_nuc}, {"scf_total_energy", r.e_scf},
            {"scf_iterations", r.scf_iterations.size()}, {"return_energy", return_energy(method, r)}};
  if (method == QcMethod::hf) return p;
  p["mp2_same_spin_correlation_energy"] = r.e_ss;
  p["mp2_opposite_spin_correlation_energy"] = r.e_os;
  p["mp2_singles_energy"] = 0.0;
  p["mp2_doubles_energy"] = r.e_corr;
  p["mp2_correlation_energy"] = r.e_corr;
  p["mp2_total_energy"] = r.e_total;
  return p;
}

json qcvars(QcMethod method, const RunResult& r) {
  json v = {{"NUCLEAR REPULSION ENERGY", r.e_nuc}, {"SCF TOTAL ENERGY", r.e_scf},
            {"CURRENT ENERGY", return_energy(method, r)}};
  if (method == QcMethod::hf) return v;
  v["MP2 SAME-SPIN CORRELATION ENERGY"] = r.e_ss;
  v["MP2 OPPOSITE-SPIN CORRELATION ENERGY"] = r.e_os;
  v["MP2 CORRELATION ENERGY"] = r.e_corr;
  v["MP2 TOTAL ENERGY"] = r.e_total;
  v["SCS-MP2 CORRELATION ENERGY"] = r.e_scs_corr;
  v["SCS-MP2 TOTAL ENERGY"] = r.e_scf + r.e_scs_corr;
  return v;
}

}  // namespace

json atomic_result(const json& input, QcMethod method, const RunResult& result, const std::string& report) {
  json output = echo(input);
  output["properties"] = properties(method, result);
  output["return_result"] = return_energy(method, result);
  if (result.gradient) {  // driver gradient: natom × 3 in Eh/bohr, row by row, as QCSchema's
    json gradient = json::array();
    for (Eigen::Index a = 0; a < result.gradient->rows(); ++a)
      for (Eigen::Index x = 0; x < 3; ++x) gradient.push_back((*result.gradient)(a, x));
    output["properties"]["return_gradient"] = gradient;
    output["return_result"] = gradient;
  }
  if (result.mp2_dipole_moment)  // QCSchema's mp2_dipole_moment: e·a0, the input's frame and origin
    output["properties"]["mp2_dipole_moment"] = {(*result.mp2_dipole_moment)(0), (*result.mp2_dipole_moment)(1),
                                                 (*result.mp2_dipole_moment)(2)};
  json extras = optional_object(input, "extras");
  extras["qcvars"] = qcvars(method, result);
  output["extras"] = extras;
  if (optional_object(input, "protocols").value("stdout", true)) output["stdout"] = report;
  output["success"] = true;
  return output;
}

json failed_result(const json& input, const std::string& error_type, const std::string& message) {
  json output = echo(input);
  output["success"] = false;
  output["error"] = {{"error_type", error_type}, {"error_message", message}};
  return output;
}

}  // namespace dfmp2
