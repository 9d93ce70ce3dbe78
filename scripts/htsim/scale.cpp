// The TCP scaling case of `railpath bench` (scale-tcp-N) written for htsim, the packet-level
// simulator issue 29 compares railpath with (github.com/Broadcom/csg-htsim; built against its
// sim/libhtsim.a by scripts/htsim-scale.sh, which says how). Not part of railpath's build.
//
// N bulk TCP flows, all from 0 s, share one drop-tail queue of N x 10 Mbit/s holding N x 100
// packets of 1 500 bytes, 10 ms one way (a pipe each way; the ACKs are not queued); 20 s. htsim's
// TCP is NewReno without SACK, delayed ACKs or a receive window (railpath's case runs CUBIC with
// all of them): the comparison is of how each simulator's cost per packet grows with the number
// of flows, not of the same model.
//
// Prints one JSON line: the event loop's wall time, the packets the sinks received in order (the
// sum of their cumulative ACKs over the packet size) and the wall time per packet.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config.h"
#include "eventlist.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "tcp.h"

int main(int argc, char **argv) {
    if (argc < 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: %s FLOWS [SECONDS]\n", argv[0]);
        return 2;
    }
    const int n = atoi(argv[1]);
    const double secs = argc > 2 ? atof(argv[2]) : 20.0;
    if (!(secs > 0)) {
        fprintf(stderr, "%s: SECONDS: expected a positive number, found '%s'\n", argv[0], argv[2]);
        return 2;
    }
    EventList eventlist;
    eventlist.setEndtime(timeFromSec(secs));
    Packet::set_packet_size(1500);
    Pipe fwd(timeFromMs(10), eventlist);
    Pipe rev(timeFromMs(10), eventlist);
    Queue queue(speedFromMbps((uint64_t)(10 * n)), memFromPkt(100 * n), eventlist, NULL);
    // htsim's retransmission timers: one scanner for every flow, every 10 ms.
    TcpRtxTimerScanner scanner(timeFromMs(10), eventlist);
    std::vector<TcpSink *> sinks;
    for (int i = 0; i < n; i++) {
        TcpSrc *src = new TcpSrc(NULL, NULL, eventlist);
        TcpSink *sink = new TcpSink();
        scanner.registerTcp(*src);
        sinks.push_back(sink);
        route_t *out = new route_t();
        out->push_back(&queue);
        out->push_back(&fwd);
        out->push_back(sink);
        route_t *back = new route_t();
        back->push_back(&rev);
        back->push_back(src);
        src->connect(*out, *back, *sink, 0);
    }
    const auto t0 = std::chrono::steady_clock::now();
    while (eventlist.doNextEvent()) {
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double packets = 0;
    for (TcpSink *s : sinks) {
        packets += (double)s->cumulative_ack() / Packet::data_packet_size();
    }
    printf("{\"case\":\"htsim-tcp-%d-newreno-shared-link-%gs\",\"wall_s\":%.6f,"
           "\"packets\":%.0f,\"ns_per_packet\":%.2f}\n",
           n, secs, wall, packets, wall * 1e9 / packets);
    return 0;
}
