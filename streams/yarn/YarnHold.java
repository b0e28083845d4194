import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnApplicationAttemptState;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.NMClient;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * A YARN application that runs containers: an unmanaged ApplicationMaster (YARN's own
 * UnmanagedAMLauncher pattern) that asks the ResourceManager for containers, has their NodeManagers launch
 * "sleep 3600" in each (NMClient, as the distributed shell's AM does) and keeps them running until its
 * standard input closes, then stops them. Allocations are what the ResourceManager books on the NodeManagers.
 *
 * Arguments: containers, memory MB and vcores of each. Prints "KOORD-YARN-RUNNING <container id> ..." and
 * "KOORD-YARN-HELD <node id> ..." once all run; exits with status 2 when they are not allocated within
 * 120 s, 3 when one does not reach RUNNING within 120 s.
 */
public final class YarnHold {
    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[0]);
        Resource each = Resource.newInstance(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
        YarnConfiguration conf = new YarnConfiguration();
        YarnClient client = YarnClient.createYarnClient();
        client.init(conf);
        client.start();
        YarnClientApplication app = client.createApplication();
        ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
        ApplicationId id = context.getApplicationId();
        context.setApplicationName("koord-yarn-hold");
        context.setQueue("default");
        context.setUnmanagedAM(true);
        context.setAMContainerSpec(ContainerLaunchContext.newInstance(null, null, null, null, null, null));
        client.submitApplication(context);
        ApplicationReport report = client.getApplicationReport(id);
        while (report.getCurrentApplicationAttemptId() == null || client.getApplicationAttemptReport(
                report.getCurrentApplicationAttemptId()).getYarnApplicationAttemptState()
                != YarnApplicationAttemptState.LAUNCHED) {
            Thread.sleep(200);
            report = client.getApplicationReport(id);
        }
        UserGroupInformation ugi = UserGroupInformation.createRemoteUser(report.getCurrentApplicationAttemptId().toString());
        ugi.addToken(client.getAMRMToken(id));
        ugi.doAs((PrivilegedExceptionAction<Void>) () -> {
            AMRMClient<ContainerRequest> amrm = AMRMClient.createAMRMClient();
            amrm.init(conf);
            amrm.start();
            amrm.registerApplicationMaster("", 0, "");
            for (int i = 0; i < count; i++) {
                amrm.addContainerRequest(new ContainerRequest(each, null, null, Priority.newInstance(0)));
            }
            List<Container> held = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 120_000;
            while (held.size() < count) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("KOORD-YARN-UNALLOCATED " + held.size() + " of " + count + " containers in 120 s");
                    System.exit(2);
                }
                held.addAll(amrm.allocate(0.1f).getAllocatedContainers());
                Thread.sleep(200);
            }
            NMClient nm = NMClient.createNMClient();
            nm.init(conf);
            nm.start();
            String log = ApplicationConstants.LOG_DIR_EXPANSION_VAR;
            for (Container container : held) {
                ContainerLaunchContext launch = ContainerLaunchContext.newInstance(null, null,
                        Collections.singletonList("exec sleep 3600 1>" + log + "/stdout 2>" + log + "/stderr"),
                        null, null, null);
                nm.startContainer(container, launch);
            }
            StringBuilder running = new StringBuilder("KOORD-YARN-RUNNING");
            StringBuilder line = new StringBuilder("KOORD-YARN-HELD");
            for (Container container : held) {
                long until = System.currentTimeMillis() + 120_000;
                ContainerStatus status = nm.getContainerStatus(container.getId(), container.getNodeId());
                while (status.getState() != ContainerState.RUNNING) {
                    if (status.getState() == ContainerState.COMPLETE || System.currentTimeMillis() > until) {
                        System.err.println("KOORD-YARN-NOT-RUNNING " + container.getId() + " " + status.getState()
                                + ": " + status.getDiagnostics());
                        System.exit(3);
                    }
                    Thread.sleep(200);
                    status = nm.getContainerStatus(container.getId(), container.getNodeId());
                }
                running.append(' ').append(container.getId());
                line.append(' ').append(container.getNodeId());
            }
            System.out.println(running);
            System.out.println(line);
            System.out.flush();
            Thread beat = new Thread(() -> {
                try {
                    while (true) {
                        amrm.allocate(0.5f);
                        Thread.sleep(1000);
                    }
                } catch (Exception stopped) {
                    return;
                }
            });
            beat.setDaemon(true);
            beat.start();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            for (Container container : held) {
                try {
                    nm.stopContainer(container.getId(), container.getNodeId());
                } catch (Exception ended) {
                    System.err.println("KOORD-YARN-ENDED " + container.getId() + ": " + ended.getMessage());
                }
            }
            amrm.unregisterApplicationMaster(FinalApplicationStatus.SUCCEEDED, "", "");
            return null;
        });
        client.stop();
    }
}
