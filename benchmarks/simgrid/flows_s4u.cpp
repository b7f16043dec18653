// Run a set of flows in SimGrid through its C++ S4U interface; write their completion times.
//
// The C++ counterpart of tests/simgrid_runner.py (SimGrid's Python bindings), for timing SimGrid
// without the Python interpreter and with any context factory (the bindings force one thread per
// actor; benchmarks/bench_simgrid.py runs this with --cfg=contexts/factory:raw). Same platform,
// same network configuration, same actors, same latency modes: read simgrid_runner.py's
// docstring for what they mean. Built and driven by benchmarks/bench_simgrid.py:
//
//     g++ -O2 -std=c++17 flows_s4u.cpp -o flows_s4u -lsimgrid
//     flows_s4u IN.txt OUT.txt [--cfg=name:value ...] [--log=...]
//
// IN.txt (plain text, whitespace separated; written by bench_simgrid.py from the JSON spec that
// simgrid_runner.py reads):
//
//     fabricsim-simgrid-flows 1
//     mode first|last|native
//     config K                 then K lines, one --cfg item each ("name:value")
//     hosts N
//     links L                  then L lines: id bandwidth(bytes/s) latency(s)
//     flows F                  then F lines: src dst size(bytes, integer) start(s) k link_1 .. link_k
//
// OUT.txt: one line per flow, input order: "finish sent" (seconds, %.17g); "sent" is when
// SimGrid's transfer ended, "finish" adds the route latency in mode "last" (as the runner).
// The config items of IN.txt come first on SimGrid's command line, the extra arguments after
// them (so the command line wins). On stdout, one JSON line: n_flows, simgrid_version, setup_s
// (reading, platform, actors), run_s (Engine::run: the simulation), total_s (wall, s).

#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

// The runner's base configuration (tests/simgrid_runner.py BASE_CONFIG) comes with the input.
struct Flow {
  int src = 0;
  int dst = 0;
  uint64_t size = 0;
  double start = 0.0;
  std::vector<int> route;
};

struct Spec {
  std::string mode = "first";
  std::vector<std::string> config;
  int hosts = 0;
  std::map<int, std::pair<double, double>> links;  // id -> (bandwidth, latency)
  std::vector<Flow> flows;
};

[[noreturn]] void fail(const std::string& what)
{
  throw std::runtime_error("flows_s4u: " + what);
}

void expect(std::istream& in, const std::string& word)
{
  std::string got;
  if (!(in >> got) || got != word)
    fail("expected '" + word + "', read '" + got + "'");
}

Spec read_spec(const std::string& path)
{
  std::ifstream in(path);
  if (!in)
    fail("cannot open " + path);
  Spec spec;
  expect(in, "fabricsim-simgrid-flows");
  expect(in, "1");
  expect(in, "mode");
  in >> spec.mode;
  if (spec.mode != "first" && spec.mode != "last" && spec.mode != "native")
    fail("mode must be first, last or native, not " + spec.mode);
  size_t n = 0;
  expect(in, "config");
  in >> n;
  spec.config.resize(n);
  for (auto& item : spec.config)
    in >> item;
  expect(in, "hosts");
  in >> spec.hosts;
  expect(in, "links");
  in >> n;
  for (size_t i = 0; i < n; i++) {
    int id;
    double bw;
    double lat;
    in >> id >> bw >> lat;
    spec.links[id] = {bw, lat};
  }
  expect(in, "flows");
  in >> n;
  spec.flows.resize(n);
  for (auto& f : spec.flows) {
    size_t k = 0;
    in >> f.src >> f.dst >> f.size >> f.start >> k;
    f.route.resize(k);
    for (auto& l : f.route)
      in >> l;
  }
  if (!in)
    fail("truncated or malformed input " + path);
  return spec;
}

}  // namespace

int main(int argc, char** argv)
{
  auto t_wall = std::chrono::steady_clock::now();
  if (argc < 3) {
    std::cerr << "usage: flows_s4u IN.txt OUT.txt [--cfg=name:value ...]\n";
    return 2;
  }
  Spec spec;
  try {
    spec = read_spec(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  const std::string out_path = argv[2];
  const bool native = spec.mode == "native";

  // Routes: one per ordered (src, dst) pair, as a full zone holds (the runner's checks).
  std::map<std::pair<int, int>, const std::vector<int>*> routes;
  for (size_t i = 0; i < spec.flows.size(); i++) {
    const Flow& f = spec.flows[i];
    if (f.src < 0 || f.src >= spec.hosts || f.dst < 0 || f.dst >= spec.hosts) {
      std::cerr << "flows_s4u: flow " << i << ": host out of range\n";
      return 2;
    }
    if (f.src == f.dst || f.route.empty())
      continue;
    for (int l : f.route)
      if (spec.links.count(l) == 0) {
        std::cerr << "flows_s4u: flow " << i << ": unknown link " << l << "\n";
        return 2;
      }
    auto [it, fresh] = routes.emplace(std::make_pair(f.src, f.dst), &f.route);
    if (!fresh && *it->second != f.route) {
      std::cerr << "flows_s4u: flow " << i << ": route " << f.src << "->" << f.dst << " differs from another flow's\n";
      return 2;
    }
  }

  // SimGrid's command line: the input's config items, then ours (later items win).
  std::vector<std::string> args = {"flows_s4u"};
  for (const auto& c : spec.config)
    args.push_back("--cfg=" + c);
  args.emplace_back("--log=root.thresh:warning");
  for (int i = 3; i < argc; i++)
    args.emplace_back(argv[i]);
  std::vector<char*> sg_argv;
  for (auto& a : args)
    sg_argv.push_back(a.data());
  sg_argv.push_back(nullptr);
  int sg_argc = static_cast<int>(args.size());
  sg4::Engine engine(&sg_argc, sg_argv.data());

  auto* zone = sg4::create_full_zone("world");
  std::vector<sg4::Host*> hosts;
  hosts.reserve(spec.hosts);
  for (int i = 0; i < spec.hosts; i++)
    hosts.push_back(zone->create_host("h" + std::to_string(i), 1e9)->seal());
  std::map<int, sg4::Link*> links;
  for (const auto& [id, bw_lat] : spec.links) {
    auto* link = zone->create_link("l" + std::to_string(id), bw_lat.first);
    link->set_latency(native ? bw_lat.second : 0.0);
    link->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
    links[id] = link->seal();
  }
  for (const auto& [pair, route] : routes) {
    std::vector<sg4::LinkInRoute> path;
    path.reserve(route->size());
    for (int l : *route)
      path.emplace_back(links[l]);
    zone->add_route(hosts[pair.first]->get_netpoint(), hosts[pair.second]->get_netpoint(), nullptr, nullptr, path,
                    false);
  }
  zone->seal();

  const size_t n = spec.flows.size();
  std::vector<double> finish(n, -1.0);
  std::vector<double> sent(n, -1.0);
  std::vector<int> payload(n);  // what the comm carries: its flow index (the runner puts i)

  for (size_t i = 0; i < n; i++) {
    const Flow& f = spec.flows[i];
    payload[i] = static_cast<int>(i);
    if (f.src == f.dst || f.route.empty()) {
      finish[i] = sent[i] = f.start;
      continue;
    }
    double lat = 0.0;
    for (int l : f.route)
      lat += spec.links[l].second;
    const double t0 = spec.mode == "first" ? f.start + lat : f.start;
    const double after = spec.mode == "last" ? lat : 0.0;
    const std::string mb = "flow" + std::to_string(i);
    const uint64_t size = f.size;
    int* data = &payload[i];
    sg4::Actor::create("send" + std::to_string(i), hosts[f.src], [mb, size, t0, data]() {
      if (t0 > sg4::Engine::get_clock())
        sg4::this_actor::sleep_until(t0);
      sg4::Mailbox::by_name(mb)->put(data, size);
    });
    sg4::Actor::create("recv" + std::to_string(i), hosts[f.dst], [mb, i, after, &finish, &sent]() {
      sg4::Mailbox::by_name(mb)->get<int>();
      sent[i]   = sg4::Engine::get_clock();
      finish[i] = sent[i] + after;
    });
  }

  auto t_run = std::chrono::steady_clock::now();
  engine.run();
  std::chrono::duration<double> run_s = std::chrono::steady_clock::now() - t_run;

  size_t missing = 0;
  for (size_t i = 0; i < n; i++)
    missing += finish[i] < 0 ? 1 : 0;
  if (missing > 0) {
    std::cerr << "flows_s4u: " << missing << " flows did not complete\n";
    return 1;
  }
  FILE* out = std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::cerr << "flows_s4u: cannot write " << out_path << "\n";
    return 2;
  }
  for (size_t i = 0; i < n; i++)
    std::fprintf(out, "%.17g %.17g\n", finish[i], sent[i]);
  std::fclose(out);
  std::chrono::duration<double> wall  = std::chrono::steady_clock::now() - t_wall;
  std::chrono::duration<double> setup = t_run - t_wall;
  int major = 0;
  int minor = 0;
  int patch = 0;
  sg_version_get(&major, &minor, &patch);
  std::printf("{\"n_flows\": %zu, \"simgrid_version\": \"%d.%d.%d\", \"setup_s\": %.6f, \"run_s\": %.6f, "
              "\"total_s\": %.6f}\n",
              n, major, minor, patch, setup.count(), run_s.count(), wall.count());
  return 0;
}
