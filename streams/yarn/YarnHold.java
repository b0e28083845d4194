import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnApplicationAttemptState;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * A YARN application that holds containers: an unmanaged ApplicationMaster (YARN's own
 * UnmanagedAMLauncher pattern) that asks the ResourceManager for containers and keeps them allocated
 * until its standard input closes. Allocations are what the ResourceManager books on the NodeManagers.
 *
 * Arguments: containers, memory MB and vcores of each. Prints "KOORD-YARN-HELD <node id> ..." once all are
 * allocated; exits with status 2 when they are not within 120 s.
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
            StringBuilder line = new StringBuilder("KOORD-YARN-HELD");
            for (Container container : held) {
                line.append(' ').append(container.getNodeId());
            }
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
            amrm.unregisterApplicationMaster(FinalApplicationStatus.SUCCEEDED, "", "");
            return null;
        });
        client.stop();
    }
}
