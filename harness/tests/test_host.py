"""The host on record (host/facts.py), the recommended settings (host/check.py) and the differences compare and
merge flag (host/differences.py). Expected values are written out by hand from the kernel's documented formats."""

from __future__ import annotations

import copy
import subprocess
import sys

from itchbench.host import check, differences, facts


def test_the_kernels_own_options_are_read_and_an_inits_are_not():
    line = "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,2-5 nohz_full=2-5 rcu_nocbs=2-5 quiet skew_tick=1 -- isolcpus=9"
    assert facts.cmdline_options(line) == {"isolcpus": "managed_irq,2-5", "nohz_full": "2-5", "rcu_nocbs": "2-5",
                                           "skew_tick": "1"}
    assert facts._selected("always [madvise] never") == "madvise"
    assert check.cpu_set("managed_irq,2-5,7") == {2, 3, 4, 5, 7} and check.cpu_set("") == set()


def _host(**changes):
    host = {"isolation": {"asked": {"isolcpus": "2-5", "nohz_full": "2-5", "rcu_nocbs": None, "irqaffinity": None},
                          "got": {"isolated": "2-5", "nohz_full": "2-5"}},
            "thp": {"enabled": "always", "defrag": "madvise"},
            "sysctl": {"net.core.rmem_max": "33554432", "net.core.busy_read": "50", "net.core.busy_poll": "0",
                       "kernel.sched_rt_runtime_us": "-1", "kernel.timer_migration": "0", "vm.swappiness": "1"},
            "smt": {"active": "1", "control": "on"}, "cpu_governor": None, "irqbalance": False}
    host.update(changes)
    return host


def test_each_recommended_setting_is_judged_with_the_command_that_would_set_it():
    by_name = {c.name: c for c in check.checks(_host(), "3-4")}
    assert by_name["kernel isolcpus"].ok and by_name["kernel nohz_full"].ok
    assert by_name["kernel rcu_nocbs"].ok is False
    assert by_name["kernel rcu_nocbs"].command == \
        "add rcu_nocbs=3-4 to GRUB_CMDLINE_LINUX in /etc/default/grub; update-grub; reboot"
    assert by_name["CPUs isolated (granted)"].ok
    assert by_name["transparent huge pages"].ok is False
    assert by_name["net.core.rmem_max"].ok and by_name["net.core.busy_read"].ok
    assert by_name["net.core.busy_poll"].ok is False and by_name["net.core.busy_poll"].command == \
        "sysctl -w net.core.busy_poll=50"
    assert by_name["SMT"].ok is False and by_name["CPU governor"].ok is None  # on, and not exposed
    assert not {c.name: c for c in check.checks(_host(), "6")}["kernel isolcpus"].ok  # CPU 6 is not isolated
    report = check.lines(check.checks(_host(), "3-4"))
    # missing: rcu_nocbs, THP, busy_poll, SMT; not exposed: the governor
    assert report[0].startswith("4 of 14 recommended settings missing, 1 not exposed by this machine, 9 in place")
    assert report[0].endswith("Nothing was changed.")


def test_without_cpus_named_the_commands_name_this_machines_cpus_but_the_first():
    # They had named the example 2-5 whatever the machine: on 2 CPUs, an isolcpus of CPUs it does not have.
    assert check.cpu_list_text({1, 2, 3, 5, 7, 8}) == "1-3,5,7-8" and check.cpu_list_text(set()) == ""
    for online, named in (({0, 1}, "1"), (set(range(8)), "1-7"), ({0, 2, 3}, "2-3")):
        by_name = {c.name: c for c in check.checks(_host(), "", online)}
        assert by_name["kernel nohz_full"].command.startswith(f"add nohz_full={named} to GRUB_CMDLINE_LINUX")
        assert by_name["CPUs isolated (granted)"].want == named
    alone = {c.name: c for c in check.checks(_host(), "", {0})}["kernel isolcpus"]
    assert alone.command == "this machine has one CPU: none to keep the rest of the machine off"


def test_cpus_this_machine_does_not_have_are_refused():
    last = max(check.online_cpus())
    for cpus, said in ((f"{last + 1}", f"names CPUs this machine does not have: {last + 1} (online: "),
                       ("two", "--cpus takes a CPU list such as 2-5 or 1,3 (got 'two')")):
        done = subprocess.run([sys.executable, "-m", "itchbench.cli", "check-host", "--cpus", cpus],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and said in done.stderr and done.stdout == ""


def test_check_host_changes_nothing_on_this_machine():
    before = facts.snapshot()
    done = subprocess.run([sys.executable, "-m", "itchbench.cli", "check-host", "--cpus", "1"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "Nothing was changed." in done.stdout.splitlines()[0]
    assert differences.differences(before, facts.snapshot()) == []
    strict = subprocess.run([sys.executable, "-m", "itchbench.cli", "check-host", "--strict"], capture_output=True,
                            text=True, timeout=60)
    assert strict.returncode == (1 if "MISSING" in strict.stdout else 0)


def test_differences_name_each_fact_that_differs():
    a = _host()
    b = copy.deepcopy(a)
    b["thp"]["enabled"] = "never"
    b["sysctl"]["vm.swappiness"] = "60"
    assert differences.differences(a, b) == ["sysctl.vm.swappiness: 1 vs 60", "thp.enabled: always vs never"]
    assert differences.differences(a, None) == []
